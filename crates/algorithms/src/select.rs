//! The built-in select family (feature `builtin`): select-if (`x < threshold`), select-flagged,
//! partition-if, unique and run-length encoding, for `u32 i32 u64 f32`, over
//! [`cohort::algorithms::select_tile`]; one kernel per type and form (the form fixed at compile
//! time, so that each kernel carries only its own path) and one for the run lengths.

use cohort::algorithms::{SelectOut, flags_if, flags_unique, select_items, select_tile};
use cohort::atomic::AtomicU64;
use cohort::block;
use cohort::slice::DisjointSlice;
use cohort::thread::{self, Scattered};

/// The select kernels of one element type, in the order the host's `SelectKernels::launch`
/// holds them: one kernel per form (its flags and whether it keeps the rejected items fixed at
/// compile time, so each carries only its own path: one kernel switching on the form at run
/// time took 78 registers for `u32`, which left three blocks a multiprocessor).
pub(crate) const SELECT_IF: usize = 0;
pub(crate) const PARTITION_IF: usize = 1;
pub(crate) const SELECT_FLAGGED: usize = 2;
pub(crate) const SELECT_UNIQUE: usize = 3;

macro_rules! select_kernels {
    ($($t:ty => $if_:ident, $part:ident, $flagged:ident, $unique:ident;)*) => {$(
        select_kernels!(@one $t, $if_, SELECT_IF, "`x < threshold` (`DeviceSelect::If`)");
        select_kernels!(@one $t, $part, PARTITION_IF, "`x < threshold`, the rest from the back (`DevicePartition::If`)");
        select_kernels!(@one $t, $flagged, SELECT_FLAGGED, "`flags[i] != 0` (`DeviceSelect::Flagged`)");
        select_kernels!(@one $t, $unique, SELECT_UNIQUE, "`x != input[i - 1]` (`DeviceSelect::Unique`; with `indices`, the run heads' offsets)");
    )*};
    (@one $t:ty, $name:ident, $form:ident, $doc:literal) => {
        #[doc = concat!("One tile of a select of `input` (see `select_tile`): ", $doc, ".")]
        #[cohort::kernel]
        fn $name(
            input: &[$t],
            flags: &[u8],
            threshold: $t,
            out: DisjointSlice<$t, Scattered>,
            indices: DisjointSlice<u64, Scattered>,
            count: DisjointSlice<u64, Scattered>,
            state: &[AtomicU64],
        ) {
            const N: usize = select_items::<$t>();
            const FORM: usize = $form;
            let smem = cohort::shared::dynamic::<$t>();
            let flags_of = |items: &[$t; N], tile: u64, first: usize| match FORM {
                SELECT_IF | PARTITION_IF => flags_if(items, |x| *x < threshold),
                SELECT_FLAGGED => {
                    let (f, _) = block::load_blocked::<u8, N>(flags, tile, 0);
                    core::array::from_fn(|j| f[j] != 0)
                }
                _ => flags_unique(input, items, first),
            };
            let indices = if FORM == SELECT_UNIQUE && !indices.is_empty() { Some(indices) } else { None };
            let out = SelectOut { items: out, partition: FORM == PARTITION_IF, indices, count };
            // SAFETY: the host API clears `state` in the stream before this launch and gives it
            // to this launch alone; this kernel writes its outputs nowhere else.
            unsafe { select_tile::<$t, N>(input, flags_of, out, state, &smem) }
        }
    };
}

select_kernels! {
    u32 => select_if_u32, partition_if_u32, select_flagged_u32, unique_u32;
    i32 => select_if_i32, partition_if_i32, select_flagged_i32, unique_i32;
    u64 => select_if_u64, partition_if_u64, select_flagged_u64, unique_u64;
    f32 => select_if_f32, partition_if_f32, select_flagged_f32, unique_f32;
}

/// The run lengths of a run-length encoding: run `k` (of `count[0]`) is `offsets[k + 1] -
/// offsets[k]` long (the last one `n - offsets[k]`).
#[cohort::kernel]
pub(crate) fn rle_lengths(offsets: &[u64], count: &[u64], n: u64, mut lengths: DisjointSlice<u32>) {
    let runs = (count[0] as usize).min(offsets.len());
    for i in thread::grid_stride(runs) {
        let k = *i;
        let next = if k + 1 < runs { offsets[k + 1] } else { n };
        lengths.set(&i, next.wrapping_sub(offsets[k]) as u32);
    }
}

#[cfg(not(target_arch = "nvptx64"))]
pub use host::*;

#[cfg(not(target_arch = "nvptx64"))]
mod host {
    use std::boxed::Box;
    use std::format;

    use cohort::DeviceCopy;
    use cohort::algorithms::{SELECT_BLOCK, select_items, select_state_len};
    use cohort_runtime::{DeviceBuffer, DeviceView, DeviceViewMut, Error, LaunchConfig, Module, Stream};

    use super::{PARTITION_IF, SELECT_FLAGGED, SELECT_IF, SELECT_UNIQUE};
    use crate::host::{Result, Temp};

    /// `x < self.0`: the select-if and partition-if predicate of the built-in kernels (CUB's
    /// benchmarks' `LessThan`). Floats: a NaN is never selected.
    #[derive(Clone, Copy, Debug)]
    pub struct LessThan<T>(pub T);

    /// The loaded select kernels of one element type: select-if, partition-if, select-flagged,
    /// unique (indexed by `SELECT_IF` …).
    pub struct SelectKernels<T: DeviceCopy> {
        launch: [LaunchFn<T>; 4],
    }

    impl<T: DeviceCopy> std::fmt::Debug for SelectKernels<T> {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("SelectKernels")
        }
    }

    type LaunchFn<T> = Box<
        dyn Fn(
                &Stream,
                LaunchConfig,
                DeviceView<'_, T>,
                DeviceView<'_, u8>,
                T,
                DeviceViewMut<'_, T>,
                DeviceViewMut<'_, u64>,
                DeviceViewMut<'_, u64>,
                &mut DeviceBuffer<u64>,
            ) -> Result<()>
            + Send
            + Sync,
    >;

    /// Element types with built-in select kernels.
    pub trait SelectBuiltin: DeviceCopy + PartialEq {
        #[doc(hidden)]
        fn kernels(a: &crate::Algorithms) -> &SelectKernels<Self>;
    }

    macro_rules! loaders {
        ($($t:ty => [$($k:ident),*], $field:ident;)*) => {
            /// The select kernels of every built-in type and the run-length kernel.
            #[derive(Debug)]
            pub(crate) struct SelectSet {
                $(pub(crate) $field: SelectKernels<$t>,)*
                pub(crate) rle: super::rle_lengths,
            }
            impl SelectSet {
                pub(crate) fn load(m: &Module) -> Result<Self> {
                    Ok(Self {
                        $($field: SelectKernels {
                            launch: [$({
                                let k = super::$k::load(m)?;
                                Box::new(move |s, c, i, f, t, o, x, n, st| k.launch(s, c, i, f, t, o, x, n, st))
                            }),*],
                        },)*
                        rle: super::rle_lengths::load(m)?,
                    })
                }
            }
            $(impl SelectBuiltin for $t {
                fn kernels(a: &crate::Algorithms) -> &SelectKernels<Self> {
                    &a.select.$field
                }
            })*
        };
    }
    loaders! {
        u32 => [select_if_u32, partition_if_u32, select_flagged_u32, unique_u32], u32s;
        i32 => [select_if_i32, partition_if_i32, select_flagged_i32, unique_i32], i32s;
        u64 => [select_if_u64, partition_if_u64, select_flagged_u64, unique_u64], u64s;
        f32 => [select_if_f32, partition_if_f32, select_flagged_f32, unique_f32], f32s;
    }

    /// What one select launch does.
    pub(crate) struct Job<'a, T: DeviceCopy> {
        pub(crate) input: &'a DeviceBuffer<T>,
        pub(crate) flags: Option<&'a DeviceBuffer<u8>>,
        pub(crate) threshold: Option<T>,
        /// Which kernel: `SELECT_IF`, `PARTITION_IF`, `SELECT_FLAGGED` or `SELECT_UNIQUE`.
        pub(crate) form: usize,
        pub(crate) with_indices: bool,
    }

    /// Runs a select into `out` / `count` (and the run heads' offsets into the temporary
    /// storage, `with_indices`), all in `stream`.
    pub(crate) fn run<T: DeviceCopy>(
        k: &SelectKernels<T>,
        stream: &Stream,
        job: Job<'_, T>,
        out: &mut DeviceBuffer<T>,
        count: &mut DeviceBuffer<u64>,
        temp: &mut Temp,
    ) -> Result<()> {
        let n = job.input.len();
        if out.len() < n {
            return Err(Error::Argument(format!(
                "select: the output holds {} elements, fewer than the input's {n} (it must hold them all: the \
                 number selected is known only on the device)",
                out.len()
            )));
        }
        if count.is_empty() {
            return Err(Error::Argument("select: the count output is empty (it needs one element)".into()));
        }
        if let Some(f) = job.flags
            && f.len() < n
        {
            return Err(Error::Argument(format!("select: {} flags for {n} elements", f.len())));
        }
        if n == 0 {
            return stream.fill_bytes(count.slice_mut(..1), 0);
        }
        let items = select_items::<T>();
        let tile = SELECT_BLOCK as usize * items;
        let tiles = n.div_ceil(tile);
        let grid = u32::try_from(tiles)
            .ok()
            .filter(|&t| t < (1 << 31))
            .ok_or_else(|| Error::Argument(format!("select: {n} elements are more than 2^31 tiles of {tile}")))?;
        let smem = u32::try_from(tile * size_of::<T>())
            .map_err(|_| Error::Argument("select: the element type is too large".into()))?;
        let Temp { gpu, state, offsets, dummy8, dummy64, .. } = temp;
        let dummy8 = Temp::grow(gpu, dummy8, 1)?;
        let dummy64 = Temp::grow(gpu, dummy64, 1)?;
        // An empty `flags` / `indices` is "none" to the kernel.
        let flags = match job.flags {
            Some(f) => f.slice(..n),
            None => dummy8.slice(..0),
        };
        let threshold = job.threshold.unwrap_or_else(zeroed);
        let state = Temp::grow(gpu, state, select_state_len(n, tile))?;
        // The look-back's contract: the counter and every status word zero before the launch.
        stream.fill_bytes(&mut *state, 0)?;
        let indices =
            if job.with_indices { Temp::grow(gpu, offsets, n)?.slice_mut(..n) } else { dummy64.slice_mut(..0) };
        let cfg = LaunchConfig::new(grid, SELECT_BLOCK).with_shared_mem(smem);
        (k.launch[job.form])(
            stream,
            cfg,
            job.input.slice(..),
            flags,
            threshold,
            out.slice_mut(..),
            indices,
            count.slice_mut(..1),
            state,
        )
    }

    fn zeroed<T: DeviceCopy>() -> T {
        cohort::assert_no_padding::<T>();
        // SAFETY: every bit pattern, zero included, is a valid `DeviceCopy` value.
        unsafe { core::mem::zeroed() }
    }

    impl crate::Algorithms {
        /// The elements `x` of `input` with `x < pred.0`, in order, into `out` from element 0;
        /// their number into `count[0]` (CUB's `DeviceSelect::If`). One launch after clearing
        /// the scan's state, all in `stream`. `out` must hold `input.len()` elements (the
        /// number selected is known only on the device); past the selected ones it is not
        /// written.
        ///
        /// # Errors
        /// `out` shorter than `input`, `count` empty; a launch or driver failure.
        pub fn select_if<T: SelectBuiltin>(
            &self,
            stream: &Stream,
            input: &DeviceBuffer<T>,
            pred: LessThan<T>,
            out: &mut DeviceBuffer<T>,
            count: &mut DeviceBuffer<u64>,
            temp: &mut Temp,
        ) -> Result<()> {
            let job = Job { input, flags: None, threshold: Some(pred.0), form: SELECT_IF, with_indices: false };
            run(T::kernels(self), stream, job, out, count, temp)
        }

        /// [`select_if`](Self::select_if) that also writes the rejected elements, from the
        /// last element of `out` backwards (in reverse input order): CUB's
        /// `DevicePartition::If`. `count[0]`: the number selected.
        ///
        /// # Errors
        /// As [`select_if`](Self::select_if).
        pub fn partition_if<T: SelectBuiltin>(
            &self,
            stream: &Stream,
            input: &DeviceBuffer<T>,
            pred: LessThan<T>,
            out: &mut DeviceBuffer<T>,
            count: &mut DeviceBuffer<u64>,
            temp: &mut Temp,
        ) -> Result<()> {
            let job = Job { input, flags: None, threshold: Some(pred.0), form: PARTITION_IF, with_indices: false };
            run(T::kernels(self), stream, job, out, count, temp)
        }

        /// The elements `input[i]` with `flags[i] != 0`, in order (CUB's
        /// `DeviceSelect::Flagged`); as [`select_if`](Self::select_if).
        ///
        /// # Errors
        /// As [`select_if`](Self::select_if), and fewer flags than elements.
        pub fn select_flagged<T: SelectBuiltin>(
            &self,
            stream: &Stream,
            input: &DeviceBuffer<T>,
            flags: &DeviceBuffer<u8>,
            out: &mut DeviceBuffer<T>,
            count: &mut DeviceBuffer<u64>,
            temp: &mut Temp,
        ) -> Result<()> {
            let job = Job { input, flags: Some(flags), threshold: None, form: SELECT_FLAGGED, with_indices: false };
            run(T::kernels(self), stream, job, out, count, temp)
        }

        /// The first element of each run of equal elements (`!=`; a NaN is a run of its own,
        /// `-0.0` continues a run of `0.0`), in order (CUB's `DeviceSelect::Unique`); as
        /// [`select_if`](Self::select_if).
        ///
        /// # Errors
        /// As [`select_if`](Self::select_if).
        pub fn unique<T: SelectBuiltin>(
            &self,
            stream: &Stream,
            input: &DeviceBuffer<T>,
            out: &mut DeviceBuffer<T>,
            count: &mut DeviceBuffer<u64>,
            temp: &mut Temp,
        ) -> Result<()> {
            let job = Job { input, flags: None, threshold: None, form: SELECT_UNIQUE, with_indices: false };
            run(T::kernels(self), stream, job, out, count, temp)
        }

        /// Run-length encoding (CUB's `DeviceRunLengthEncode::Encode`): the first element of
        /// each run of equal elements into `unique_out`, its length into `lengths`, the number
        /// of runs into `count[0]`. Two launches (the run heads with their offsets, kept in
        /// `temp`; then the lengths) after clearing the scan's state, all in `stream`.
        ///
        /// # Errors
        /// `unique_out` or `lengths` shorter than `input`, `count` empty, an input of 2^32
        /// elements or more (the lengths are `u32`); a launch or driver failure.
        pub fn run_length_encode<T: SelectBuiltin>(
            &self,
            stream: &Stream,
            input: &DeviceBuffer<T>,
            unique_out: &mut DeviceBuffer<T>,
            lengths: &mut DeviceBuffer<u32>,
            count: &mut DeviceBuffer<u64>,
            temp: &mut Temp,
        ) -> Result<()> {
            let n = input.len();
            if lengths.len() < n {
                return Err(Error::Argument(format!(
                    "run_length_encode: the lengths output holds {} elements, fewer than the input's {n}",
                    lengths.len()
                )));
            }
            if n >= 1 << 32 {
                return Err(Error::Argument("run_length_encode: 2^32 elements or more (the lengths are u32)".into()));
            }
            let job = Job { input, flags: None, threshold: None, form: SELECT_UNIQUE, with_indices: true };
            run(T::kernels(self), stream, job, unique_out, count, temp)?;
            if n == 0 {
                return Ok(());
            }
            let offsets = temp.offsets.as_ref().expect("the select above allocated the offsets");
            let cfg = LaunchConfig::new(n.div_ceil(256).min(4096) as u32, 256);
            self.select.rle.launch(stream, cfg, offsets.slice(..n), count.slice(..1), n as u64, lengths.slice_mut(..))
        }
    }
}
