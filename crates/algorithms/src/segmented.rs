//! The built-in segmented reduce (feature `builtin`): [`Sum`](crate::Sum) of `u32 i32 u64 i64
//! f32 f64`, [`Min`](crate::Min) and [`Max`](crate::Max) of `u32 i32 f32`, over
//! [`cohort::algorithms::segmented_reduce_chunk`] and [`segmented_reduce_fixup`]; two
//! kernels per type and operator.

use cohort::algorithms::{SEG_BYTES, segmented_reduce_chunk, segmented_reduce_fixup};
use cohort::slice::DisjointSlice;
use cohort::thread::Scattered;

macro_rules! seg_kernels {
    ($($t:ty, $op:ident => $chunk:ident, $fixup:ident;)*) => {$(
        /// One chunk of a segmented reduction (see `segmented_reduce_chunk`).
        // At most 64 registers: four blocks of 256 threads per SM.
        #[cohort::kernel(launch_bounds(256, 4))]
        fn $chunk(
            input: &[$t],
            offsets: &[u64],
            init: $t,
            mut out: DisjointSlice<$t, Scattered>,
            mut head: DisjointSlice<$t, Scattered>,
            mut tail: DisjointSlice<$t, Scattered>,
        ) {
            // SAFETY: this kernel writes `out`, `head` and `tail` nowhere else (block `c` is
            // chunk `c`: block ranks are distinct in any grid).
            unsafe {
                segmented_reduce_chunk::<$t, _, { SEG_BYTES / size_of::<$t>() }>(
                    input, offsets, init, crate::$op, &mut out, &mut head, &mut tail,
                )
            }
        }

        /// The fix-up of a segmented reduction (see `segmented_reduce_fixup`).
        #[cohort::kernel]
        fn $fixup(
            n: u64,
            chunk: u64,
            offsets: &[u64],
            head: &[$t],
            tail: &[$t],
            init: $t,
            mut out: DisjointSlice<$t, Scattered>,
        ) {
            // SAFETY: the host API launches this after the chunk kernel over the same input
            // length, chunk and offsets, in the same stream; this kernel writes `out` nowhere
            // else.
            unsafe {
                segmented_reduce_fixup::<$t, _>(
                    n as usize, chunk as usize, offsets, head, tail, init, crate::$op, &mut out,
                )
            }
        }
    )*};
}

seg_kernels! {
    u32, Sum => seg_chunk_sum_u32, seg_fixup_sum_u32;
    i32, Sum => seg_chunk_sum_i32, seg_fixup_sum_i32;
    u64, Sum => seg_chunk_sum_u64, seg_fixup_sum_u64;
    i64, Sum => seg_chunk_sum_i64, seg_fixup_sum_i64;
    f32, Sum => seg_chunk_sum_f32, seg_fixup_sum_f32;
    f64, Sum => seg_chunk_sum_f64, seg_fixup_sum_f64;
    u32, Min => seg_chunk_min_u32, seg_fixup_min_u32;
    i32, Min => seg_chunk_min_i32, seg_fixup_min_i32;
    f32, Min => seg_chunk_min_f32, seg_fixup_min_f32;
    u32, Max => seg_chunk_max_u32, seg_fixup_max_u32;
    i32, Max => seg_chunk_max_i32, seg_fixup_max_i32;
    f32, Max => seg_chunk_max_f32, seg_fixup_max_f32;
}

#[cfg(not(target_arch = "nvptx64"))]
pub use host::*;

#[cfg(not(target_arch = "nvptx64"))]
mod host {
    use std::boxed::Box;
    use std::format;

    use cohort::DeviceCopy;
    use cohort::algorithms::{SEG_BLOCK, SEG_BYTES};
    use cohort_runtime::{DeviceBuffer, DeviceView, DeviceViewMut, Error, LaunchConfig, Module, Stream};

    use crate::host::{Result, Temp};
    use crate::{Max, Min, Sum};

    type ChunkFn<T> = Box<
        dyn Fn(
                &Stream,
                LaunchConfig,
                DeviceView<'_, T>,
                DeviceView<'_, u64>,
                T,
                DeviceViewMut<'_, T>,
                DeviceViewMut<'_, T>,
                DeviceViewMut<'_, T>,
            ) -> Result<()>
            + Send
            + Sync,
    >;
    type FixupFn<T> = Box<
        dyn Fn(
                &Stream,
                LaunchConfig,
                u64,
                u64,
                DeviceView<'_, u64>,
                DeviceView<'_, T>,
                DeviceView<'_, T>,
                T,
                DeviceViewMut<'_, T>,
            ) -> Result<()>
            + Send
            + Sync,
    >;

    /// The loaded segmented-reduce kernels of one element type and operator.
    pub struct SegmentedKernels<T: DeviceCopy> {
        chunk: ChunkFn<T>,
        fixup: FixupFn<T>,
    }

    impl<T: DeviceCopy> std::fmt::Debug for SegmentedKernels<T> {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("SegmentedKernels")
        }
    }

    /// An element type and built-in operator with segmented-reduce kernels.
    pub trait SegmentedBuiltin<Op>: DeviceCopy {
        #[doc(hidden)]
        fn kernels(a: &crate::Algorithms) -> &SegmentedKernels<Self>;
    }

    macro_rules! loaders {
        ($($t:ty, $op:ident => $field:ident, $chunk:ident, $fixup:ident;)*) => {
            /// The segmented-reduce kernels of every built-in type and operator.
            #[derive(Debug)]
            pub(crate) struct SegmentedSet {
                $(pub(crate) $field: SegmentedKernels<$t>,)*
            }
            impl SegmentedSet {
                pub(crate) fn load(m: &Module) -> Result<Self> {
                    Ok(Self {
                        $($field: {
                            let c = super::$chunk::load(m)?;
                            let f = super::$fixup::load(m)?;
                            SegmentedKernels {
                                chunk: Box::new(move |s, cfg, i, o, init, out, h, t| c.launch(s, cfg, i, o, init, out, h, t)),
                                fixup: Box::new(move |s, cfg, n, ch, o, h, t, init, out| f.launch(s, cfg, n, ch, o, h, t, init, out)),
                            }
                        },)*
                    })
                }
            }
            $(impl SegmentedBuiltin<$op> for $t {
                fn kernels(a: &crate::Algorithms) -> &SegmentedKernels<Self> {
                    &a.segmented.$field
                }
            })*
        };
    }
    loaders! {
        u32, Sum => sum_u32, seg_chunk_sum_u32, seg_fixup_sum_u32;
        i32, Sum => sum_i32, seg_chunk_sum_i32, seg_fixup_sum_i32;
        u64, Sum => sum_u64, seg_chunk_sum_u64, seg_fixup_sum_u64;
        i64, Sum => sum_i64, seg_chunk_sum_i64, seg_fixup_sum_i64;
        f32, Sum => sum_f32, seg_chunk_sum_f32, seg_fixup_sum_f32;
        f64, Sum => sum_f64, seg_chunk_sum_f64, seg_fixup_sum_f64;
        u32, Min => min_u32, seg_chunk_min_u32, seg_fixup_min_u32;
        i32, Min => min_i32, seg_chunk_min_i32, seg_fixup_min_i32;
        f32, Min => min_f32, seg_chunk_min_f32, seg_fixup_min_f32;
        u32, Max => max_u32, seg_chunk_max_u32, seg_fixup_max_u32;
        i32, Max => max_i32, seg_chunk_max_i32, seg_fixup_max_i32;
        f32, Max => max_f32, seg_chunk_max_f32, seg_fixup_max_f32;
    }

    /// A `T` view of the first `n` elements' bytes of `buf`.
    fn view_mut<T: DeviceCopy>(buf: &mut DeviceBuffer<u8>, n: usize) -> Result<DeviceViewMut<'_, T>> {
        buf.slice_mut(..n * size_of::<T>()).cast::<T>().ok_or_else(|| {
            Error::Argument("segmented reduce: the temporary storage is not aligned for the type".into())
        })
    }
    fn view<T: DeviceCopy>(buf: &DeviceBuffer<u8>, n: usize) -> Result<DeviceView<'_, T>> {
        buf.slice(..n * size_of::<T>()).cast::<T>().ok_or_else(|| {
            Error::Argument("segmented reduce: the temporary storage is not aligned for the type".into())
        })
    }

    /// Warp groups (of 32 segments) per SM for the fix-up's grid.
    const FIXUP_BLOCKS_PER_SM: usize = 8;

    impl crate::Algorithms {
        /// CUB's `DeviceSegmentedReduce::Reduce` (`Sum`, `Min`, `Max`): for each segment `s <
        /// m = offsets.len() - 1`, `out[s] = init op input[offsets[s]] op … op
        /// input[offsets[s + 1] - 1]` — `init` for an empty segment. Offsets are positions in
        /// `input`, ascending, each clamped to `input.len()` (elements before `offsets[0]` or
        /// from `offsets[m]` on belong to no segment; offsets that do not ascend give
        /// unspecified values, never an access out of bounds). Elements past `m` of `out` are
        /// left alone. The work is cut by elements, not segments, so one huge segment and
        /// millions of tiny ones run alike (see [`cohort::algorithms::segmented_reduce`]):
        /// two launches in `stream`, with two values per 4096-element chunk in `temp`.
        ///
        /// # Errors
        /// `out` shorter than the segments; more than 2^31 − 1 chunks; a launch or driver
        /// failure.
        #[allow(clippy::too_many_arguments)]
        pub fn segmented_reduce<T: SegmentedBuiltin<Op>, Op>(
            &self,
            stream: &Stream,
            input: &DeviceBuffer<T>,
            offsets: &DeviceBuffer<u64>,
            out: &mut DeviceBuffer<T>,
            init: T,
            _op: Op,
            temp: &mut Temp,
        ) -> Result<()> {
            let m = offsets.len().saturating_sub(1);
            if out.len() < m {
                return Err(Error::Argument(format!(
                    "segmented reduce: the output holds {} values, fewer than the {m} segments",
                    out.len()
                )));
            }
            if m == 0 {
                return Ok(());
            }
            let k = T::kernels(self);
            let n = input.len();
            let chunk = SEG_BLOCK as usize * (SEG_BYTES / size_of::<T>());
            let chunks = n.div_ceil(chunk).max(1);
            let grid = u32::try_from(chunks).ok().filter(|&g| g < 1 << 31).ok_or_else(|| {
                Error::Argument(format!("segmented reduce: {n} elements are more than 2^31 - 1 chunks of {chunk}"))
            })?;
            let Temp { gpu, seg_head, seg_tail, .. } = temp;
            let head = Temp::grow(gpu, seg_head, chunks * size_of::<T>())?;
            let tail = Temp::grow(gpu, seg_tail, chunks * size_of::<T>())?;
            if n > 0 {
                (k.chunk)(
                    stream,
                    LaunchConfig::new(grid, SEG_BLOCK),
                    input.slice(..),
                    offsets.slice(..),
                    init,
                    out.slice_mut(..m),
                    view_mut::<T>(head, chunks)?,
                    view_mut::<T>(tail, chunks)?,
                )?;
            }
            let warps_per_block = SEG_BLOCK as usize / 32;
            let blocks =
                m.div_ceil(32).div_ceil(warps_per_block).clamp(1, self.sms.max(1) as usize * FIXUP_BLOCKS_PER_SM);
            (k.fixup)(
                stream,
                LaunchConfig::new(blocks as u32, SEG_BLOCK),
                n as u64,
                chunk as u64,
                offsets.slice(..),
                view::<T>(head, chunks)?,
                view::<T>(tail, chunks)?,
                init,
                out.slice_mut(..m),
            )
        }
    }
}
