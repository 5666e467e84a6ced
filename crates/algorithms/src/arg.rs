//! The built-in argmin / argmax (feature `builtin`): `u32 i32 u64 i64 f32 f64`, over
//! [`cohort::algorithms::arg_tiles`] and [`reduce_tiles`]; per type a kernel of per-block
//! partials and one that reduces them (the direction an argument).

use cohort::algorithms::{ARG_BYTES, ArgPair, arg_combine, arg_tiles, reduce_tiles};
use cohort::slice::{DisjointSlice, PerBlock};

macro_rules! arg_kernels {
    ($($t:ty => $tiles:ident, $final:ident;)*) => {$(
        /// Block `b`'s best pair of its tiles into `partials[b]` (`max`: argmax).
        // At most 64 registers: four blocks of 256 threads per SM.
        #[cohort::kernel(launch_bounds(256, 4))]
        fn $tiles(input: &[$t], max: u32, mut partials: DisjointSlice<ArgPair<$t>, PerBlock>) {
            let r = arg_tiles::<$t, { ARG_BYTES / size_of::<$t>() }>(input, max != 0);
            let block = cohort::cg::this_thread_block();
            if let (Some(b), Some(r)) = (block.leader_index(), r) {
                partials.set(b, r);
            }
        }

        /// The best of `partials` into `index[0]`, `value[0]` (one block).
        #[cohort::kernel]
        fn $final(
            partials: &[ArgPair<$t>],
            max: u32,
            mut index: DisjointSlice<u64, PerBlock>,
            mut value: DisjointSlice<$t, PerBlock>,
        ) {
            let max = max != 0;
            let r = reduce_tiles::<ArgPair<$t>, _, 4>(partials, move |a, b| arg_combine(a, b, max));
            let block = cohort::cg::this_thread_block();
            if let (Some(b), Some(r)) = (block.leader_index(), r) {
                let i = r.index();
                value.set(&b, r.value);
                index.set(b, i);
            }
        }
    )*};
}

arg_kernels! {
    u32 => arg_tiles_u32, arg_final_u32;
    i32 => arg_tiles_i32, arg_final_i32;
    u64 => arg_tiles_u64, arg_final_u64;
    i64 => arg_tiles_i64, arg_final_i64;
    f32 => arg_tiles_f32, arg_final_f32;
    f64 => arg_tiles_f64, arg_final_f64;
}

#[cfg(not(target_arch = "nvptx64"))]
pub use host::*;

#[cfg(not(target_arch = "nvptx64"))]
mod host {
    use std::boxed::Box;

    use cohort::algorithms::{ARG_BLOCK, ARG_BYTES, ArgPair, ArgValue};
    use cohort_runtime::{DeviceBuffer, DeviceView, DeviceViewMut, Error, LaunchConfig, Module, Stream};

    use crate::host::{Result, Temp};

    type TilesFn<T> = Box<
        dyn Fn(&Stream, LaunchConfig, DeviceView<'_, T>, u32, DeviceViewMut<'_, ArgPair<T>>) -> Result<()>
            + Send
            + Sync,
    >;
    type FinalFn<T> = Box<
        dyn Fn(
                &Stream,
                LaunchConfig,
                DeviceView<'_, ArgPair<T>>,
                u32,
                DeviceViewMut<'_, u64>,
                DeviceViewMut<'_, T>,
            ) -> Result<()>
            + Send
            + Sync,
    >;

    /// The loaded argmin / argmax kernels of one element type.
    pub struct ArgKernels<T: ArgValue> {
        tiles: TilesFn<T>,
        last: FinalFn<T>,
    }

    impl<T: ArgValue> std::fmt::Debug for ArgKernels<T> {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("ArgKernels")
        }
    }

    /// Element types with built-in argmin / argmax kernels.
    pub trait ArgBuiltin: ArgValue {
        #[doc(hidden)]
        fn kernels(a: &crate::Algorithms) -> &ArgKernels<Self>;
    }

    macro_rules! loaders {
        ($($t:ty => $field:ident, $tiles:ident, $final:ident;)*) => {
            /// The arg kernels of every built-in type.
            #[derive(Debug)]
            pub(crate) struct ArgSet {
                $(pub(crate) $field: ArgKernels<$t>,)*
            }
            impl ArgSet {
                pub(crate) fn load(m: &Module) -> Result<Self> {
                    Ok(Self {
                        $($field: {
                            let t = super::$tiles::load(m)?;
                            let f = super::$final::load(m)?;
                            ArgKernels {
                                tiles: Box::new(move |s, c, i, max, p| t.launch(s, c, i, max, p)),
                                last: Box::new(move |s, c, p, max, i, v| f.launch(s, c, p, max, i, v)),
                            }
                        },)*
                    })
                }
            }
            $(impl ArgBuiltin for $t {
                fn kernels(a: &crate::Algorithms) -> &ArgKernels<Self> {
                    &a.arg.$field
                }
            })*
        };
    }
    loaders! {
        u32 => u32s, arg_tiles_u32, arg_final_u32;
        i32 => i32s, arg_tiles_i32, arg_final_i32;
        u64 => u64s, arg_tiles_u64, arg_final_u64;
        i64 => i64s, arg_tiles_i64, arg_final_i64;
        f32 => f32s, arg_tiles_f32, arg_final_f32;
        f64 => f64s, arg_tiles_f64, arg_final_f64;
    }

    /// Blocks of the first pass at most (the second reduces their partials in one block).
    const ARG_GRID: usize = 1024;

    fn arg<T: ArgBuiltin>(
        a: &crate::Algorithms,
        stream: &Stream,
        input: &DeviceBuffer<T>,
        index: &mut DeviceBuffer<u64>,
        value: &mut DeviceBuffer<T>,
        max: bool,
        temp: &mut Temp,
    ) -> Result<()> {
        let what = if max { "arg_max" } else { "arg_min" };
        if input.is_empty() {
            return Err(Error::Argument(std::format!("{what}: the input is empty (no position to give)")));
        }
        if index.is_empty() || value.is_empty() {
            return Err(Error::Argument(std::format!("{what}: the index and value outputs need one element each")));
        }
        let k = T::kernels(a);
        let tile = ARG_BLOCK as usize * (ARG_BYTES / size_of::<T>());
        let grid = input.len().div_ceil(tile).clamp(1, ARG_GRID);
        let bytes = grid * size_of::<ArgPair<T>>();
        let Temp { gpu, arg, .. } = temp;
        let partials = Temp::grow(gpu, arg, bytes)?;
        let cast = || Error::Argument(std::format!("{what}: the temporary storage is not aligned for the type"));
        let p = partials.slice_mut(..bytes).cast::<ArgPair<T>>().ok_or_else(cast)?;
        (k.tiles)(stream, LaunchConfig::new(grid as u32, ARG_BLOCK), input.slice(..), max as u32, p)?;
        let p = partials.slice(..bytes).cast::<ArgPair<T>>().ok_or_else(cast)?;
        (k.last)(stream, LaunchConfig::new(1, ARG_BLOCK), p, max as u32, index.slice_mut(..1), value.slice_mut(..1))
    }

    impl crate::Algorithms {
        /// CUB's `DeviceReduce::ArgMin`: the position of the first smallest element of
        /// `input` into `index[0]`, the element into `value[0]`. Floats: `-0.0` is smaller
        /// than `+0.0`, and a NaN counts as smaller than every number (the first NaN wins, as
        /// `torch.argmin`). Two launches in `stream` (per-block partials in `temp`, then one
        /// block).
        ///
        /// # Errors
        /// An empty input or output; a launch or driver failure.
        pub fn arg_min<T: ArgBuiltin>(
            &self,
            stream: &Stream,
            input: &DeviceBuffer<T>,
            index: &mut DeviceBuffer<u64>,
            value: &mut DeviceBuffer<T>,
            temp: &mut Temp,
        ) -> Result<()> {
            arg(self, stream, input, index, value, false, temp)
        }

        /// CUB's `DeviceReduce::ArgMax`: the first largest element's position and value, as
        /// [`arg_min`](Self::arg_min) (`+0.0` is larger than `-0.0`; a NaN counts as larger
        /// than every number: the first NaN wins, as `torch.argmax`).
        ///
        /// # Errors
        /// As [`arg_min`](Self::arg_min).
        pub fn arg_max<T: ArgBuiltin>(
            &self,
            stream: &Stream,
            input: &DeviceBuffer<T>,
            index: &mut DeviceBuffer<u64>,
            value: &mut DeviceBuffer<T>,
            temp: &mut Temp,
        ) -> Result<()> {
            arg(self, stream, input, index, value, true, temp)
        }
    }
}
