//! Streaming a host array through the GPU in chunks: [`Pipeline`].

use std::time::{Duration, Instant};

use cohort::DeviceCopy;

use crate::device::Gpu;
use crate::error::{Error, Result};
use crate::memory::{DeviceBuffer, DeviceView, DeviceViewMut};
use crate::pinned::PinnedBuffer;
use crate::stream::{Stream, StreamOptions};

/// Which part of the input the closure of [`Pipeline::run`] is given.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Chunk {
    /// The chunk's number: 0, 1, 2, … in input order.
    pub index: usize,
    /// Index of the chunk's first element in the whole input (and output).
    pub start: usize,
    /// Number of elements: [`Pipeline::chunk_len`], except for a shorter last chunk.
    pub len: usize,
}

/// What a [`Pipeline::run`] did, for reporting throughput and where the host spent its time.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct PipelineStats {
    /// Elements processed.
    pub elements: usize,
    /// Bytes copied from the input (`elements * size_of::<T>()`).
    pub input_bytes: usize,
    /// Bytes copied into the output (`elements * size_of::<U>()`).
    pub output_bytes: usize,
    /// Chunks processed.
    pub chunks: usize,
    /// Wall time of the whole run, from the first staging copy to the last output copied out.
    pub elapsed: Duration,
    /// Host time copying between the caller's arrays and the staging buffers.
    pub host_copy: Duration,
    /// Host time waiting for the GPU to release a staging slot (or to finish, at the end).
    pub gpu_wait: Duration,
}

impl PipelineStats {
    /// Input bytes per second over the run, in GB/s (10⁹ bytes).
    #[must_use]
    pub fn input_gbs(&self) -> f64 {
        self.input_bytes as f64 / self.elapsed.as_secs_f64() / 1e9
    }

    /// Output bytes per second over the run, in GB/s.
    #[must_use]
    pub fn output_gbs(&self) -> f64 {
        self.output_bytes as f64 / self.elapsed.as_secs_f64() / 1e9
    }
}

/// One stream's resources: the stream, its device chunks and its two staging slots.
struct Lane<T: DeviceCopy, U: DeviceCopy> {
    stream: Stream,
    dev_in: DeviceBuffer<T>,
    dev_out: DeviceBuffer<U>,
    slots: [Slot<T, U>; 2],
}

/// A staging slot: pinned input and output of one chunk, and the chunk whose output it holds
/// (or will hold, once its download finishes) until copied out.
struct Slot<T: DeviceCopy, U: DeviceCopy> {
    input: PinnedBuffer<T>,
    output: PinnedBuffer<U>,
    pending: Option<Chunk>,
}

/// Processes a host array in chunks — host → device copy, the caller's kernels, device → host
/// copy — on several streams at once, through pinned staging buffers allocated once: the
/// overlap of NVIDIA's "How to Overlap Data Transfers in CUDA C/C++", packaged. The result is
/// the same as processing the whole array at once; one chunk's upload, another's kernel and a
/// third's download run at the same time on the GPU's copy engines and SMs. The arrays can be
/// far larger than GPU memory: only one chunk per stream lives on the device.
///
/// The caller's arrays are ordinary (pageable) memory, which the GPU cannot copy
/// asynchronously, so the pipeline stages them through page-locked buffers, two slots per
/// stream (double buffering): while the GPU works on the chunks queued on the other streams,
/// the host copies finished outputs out of one stream's slots and the next inputs into them.
/// Taking a slot back waits for that slot's previous use through the staging buffers' own
/// stream-ordered tracking ([`PinnedBuffer::as_mut_slice`]), never for the whole device. The
/// host waits for a stream up to its latest operation, so chunk `k` runs on stream
/// `(k / 2) % N`, in its slot `k % 2`: a stream takes two consecutive chunks, one wait gives
/// both slots back, and meanwhile the other `N - 1` streams' `2(N - 1)` chunks keep the GPU
/// busy.
///
/// | CUDA C++ (the article) | [`Pipeline`] |
/// |---|---|
/// | `cudaMallocHost` of the whole array | two pinned staging slots per stream, of one chunk each |
/// | `cudaMalloc` of the whole array | one device input and one output chunk per stream |
/// | `for i: cudaMemcpyAsync(H2D, s[i]); kernel<<<…, s[i]>>>; cudaMemcpyAsync(D2H, s[i])` | [`Pipeline::run`], the launch in its closure |
/// | `cudaDeviceSynchronize()` at the end | done by [`Pipeline::run`] before it returns |
///
/// ```no_run
/// # mod kernels { pub struct add_one; impl add_one {
/// #   pub fn load(_: &cohort_runtime::Module) -> Result<Self, cohort_runtime::Error> { unimplemented!() }
/// #   pub fn launch(&self, _: &cohort_runtime::Stream, _: impl Into<cohort_runtime::LaunchConfig>,
/// #     _: cohort_runtime::DeviceView<'_, f32>, _: cohort_runtime::DeviceViewMut<'_, f32>)
/// #     -> Result<(), cohort_runtime::Error> { unimplemented!() } }
/// #   pub static PTX: cohort_runtime::PtxSet = cohort_runtime::PtxSet { crate_name: "k", modules: &[] }; }
/// use cohort_runtime::{Gpu, LaunchConfig, Pipeline};
///
/// # fn main() -> Result<(), cohort_runtime::Error> {
/// let gpu = Gpu::new(0)?;
/// let add_one = kernels::add_one::load(&gpu.load(&kernels::PTX)?)?; // out[i] = input[i] + 1
/// let input = vec![1.0f32; 1 << 30];                                 // 4 GiB, on the host
/// let mut output = vec![0.0f32; input.len()];
///
/// // 4 streams, chunks of 4 Mi elements (16 MiB): 64 MiB of each on the device.
/// let mut pipe = Pipeline::<f32, f32>::new(&gpu, 4, 4 << 20)?;
/// let stats = pipe.run_with_progress(
///     &input,
///     &mut output,
///     |stream, input, output, chunk| {
///         add_one.launch(stream, LaunchConfig::for_elements(chunk.len, 256), input, output)
///     },
///     |done, total| eprint!("\r{done} / {total}"),
/// )?;
/// assert!(output.iter().all(|&x| x == 2.0));
/// println!("{:.1} GB/s", stats.input_gbs());
/// # Ok(()) }
/// ```
pub struct Pipeline<T: DeviceCopy, U: DeviceCopy> {
    lanes: Vec<Lane<T, U>>,
    chunk_len: usize,
    host_threads: usize,
}

impl<T: DeviceCopy, U: DeviceCopy> std::fmt::Debug for Pipeline<T, U> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pipeline")
            .field("streams", &self.lanes.len())
            .field("chunk_len", &self.chunk_len)
            .field("host_threads", &self.host_threads)
            .finish()
    }
}

/// Below this many bytes per thread, a host copy runs on one thread.
const MIN_BYTES_PER_THREAD: usize = 1 << 20;

impl<T, U> Pipeline<T, U>
where
    T: DeviceCopy + Send + Sync,
    U: DeviceCopy + Send + Sync,
{
    /// A pipeline of `streams` non-blocking streams and chunks of `chunk_len` elements:
    /// allocates, per stream, a device input and output chunk and two pinned staging slots
    /// (input and output each).
    ///
    /// Use two streams or more: with one, the host waits for the stream's both chunks before
    /// refilling either, so its copies and the GPU's work alternate instead of overlapping.
    ///
    /// Host copies between the caller's arrays and the staging slots use up to
    /// [`std::thread::available_parallelism`] threads, at most 8 (see
    /// [`Pipeline::host_threads`]).
    ///
    /// # Errors
    /// [`Error::Argument`] for zero streams or a zero chunk length; out of device or pinned
    /// memory; a driver failure.
    pub fn new(gpu: &Gpu, streams: usize, chunk_len: usize) -> Result<Self> {
        if streams == 0 || chunk_len == 0 {
            return Err(Error::Argument(format!(
                "Pipeline: needs at least one stream and one element per chunk (got {streams} streams, chunks of \
                 {chunk_len})"
            )));
        }
        let lanes = (0..streams)
            .map(|_| {
                let slot = || -> Result<Slot<T, U>> {
                    Ok(Slot { input: gpu.pinned(chunk_len)?, output: gpu.pinned(chunk_len)?, pending: None })
                };
                Ok(Lane {
                    stream: gpu.new_stream_with(StreamOptions::new().non_blocking(true))?,
                    // SAFETY: each run writes a chunk's `len` elements (the upload) before the
                    // closure reads them, and the closure is handed only those `len` elements.
                    dev_in: unsafe { DeviceBuffer::uninit(gpu, chunk_len)? },
                    // Zeroed: the closure may read its output view before writing it.
                    dev_out: gpu.zeroed(chunk_len)?,
                    slots: [slot()?, slot()?],
                })
            })
            .collect::<Result<Vec<_>>>()?;
        let threads = std::thread::available_parallelism().map_or(1, |n| n.get()).min(8);
        Ok(Self { lanes, chunk_len, host_threads: threads })
    }

    /// Sets how many threads copy between the caller's arrays and the staging buffers (at
    /// least 1). One thread copies ~10 GB/s on a typical server, less than a PCIe 5 or
    /// NVLink-C2C link moves each way: the staging copies bound the throughput unless they
    /// are spread over a few cores.
    #[must_use]
    pub fn host_threads(mut self, threads: usize) -> Self {
        self.host_threads = threads.max(1);
        self
    }

    /// Number of streams.
    #[must_use]
    pub fn streams(&self) -> usize {
        self.lanes.len()
    }

    /// Elements per chunk.
    #[must_use]
    pub fn chunk_len(&self) -> usize {
        self.chunk_len
    }

    /// Bytes of device memory the pipeline holds.
    #[must_use]
    pub fn device_bytes(&self) -> usize {
        self.lanes.len() * self.chunk_len * (size_of::<T>() + size_of::<U>())
    }

    /// Bytes of pinned host memory the pipeline holds.
    #[must_use]
    pub fn pinned_bytes(&self) -> usize {
        2 * self.device_bytes()
    }

    /// Runs `kernel` over `input` into `output` (same length) chunk by chunk; see
    /// [`Pipeline::run_with_progress`].
    ///
    /// # Errors
    /// As [`Pipeline::run_with_progress`].
    pub fn run<K>(&mut self, input: &[T], output: &mut [U], kernel: K) -> Result<PipelineStats>
    where
        K: FnMut(&Stream, DeviceView<'_, T>, DeviceViewMut<'_, U>, Chunk) -> Result<()>,
    {
        self.run_with_progress(input, output, kernel, |_, _| {})
    }

    /// Runs `kernel` over `input` into `output` (same length) chunk by chunk, and returns once
    /// every chunk's output is in `output`.
    ///
    /// For each chunk, `kernel(stream, input, output, chunk)` enqueues the work on `stream`
    /// (typically one or more launches; it must not wait for them): `input` holds the chunk's
    /// elements, uploaded; what it leaves in `output` (the chunk's length too) is downloaded
    /// into `output[chunk.start..][..chunk.len]`. Element `i` of the views is element
    /// `chunk.start + i` of the whole arrays. `output` holds what an earlier chunk on the same
    /// stream left there: write every element.
    ///
    /// `progress(done, total)` is called each time a chunk's output has been copied out, with
    /// the number of elements finished so far (chunks finish in order).
    ///
    /// # Errors
    /// [`Error::Argument`] if the lengths differ; what `kernel` returns (the run stops there:
    /// part of `output` may be written); a driver failure, or a kernel that failed.
    pub fn run_with_progress<K, P>(
        &mut self,
        input: &[T],
        output: &mut [U],
        mut kernel: K,
        mut progress: P,
    ) -> Result<PipelineStats>
    where
        K: FnMut(&Stream, DeviceView<'_, T>, DeviceViewMut<'_, U>, Chunk) -> Result<()>,
        P: FnMut(usize, usize),
    {
        if input.len() != output.len() {
            return Err(Error::Argument(format!(
                "Pipeline::run: the input has {} elements, the output {}",
                input.len(),
                output.len()
            )));
        }
        let total = input.len();
        let started = Instant::now();
        let mut stats = PipelineStats {
            elements: total,
            input_bytes: size_of_val(input),
            output_bytes: size_of_val(output),
            ..PipelineStats::default()
        };
        // A failed earlier run may have left outputs behind: forget them.
        for lane in &mut self.lanes {
            for slot in &mut lane.slots {
                slot.pending = None;
            }
        }
        let (chunk_len, threads, streams) = (self.chunk_len, self.host_threads, self.lanes.len());
        let mut done = 0;
        for (index, start) in (0..total).step_by(chunk_len).enumerate() {
            let chunk = Chunk { index, start, len: chunk_len.min(total - start) };
            let lane = &mut self.lanes[(index / 2) % streams];
            let slot = &mut lane.slots[index % 2];
            // Take the slot back: wait for its previous chunk's download (and so for its
            // upload), then copy that chunk's output out and this chunk's input in.
            let waited = Instant::now();
            let previous = match slot.pending.take() {
                Some(prev) => Some((prev, &slot.output.as_slice()?[..prev.len])),
                None => None,
            };
            let stage_in = &mut slot.input.as_mut_slice()?[..chunk.len];
            let copying = Instant::now();
            stats.gpu_wait += copying - waited;
            let drain = previous.map(|(prev, staged)| (staged, &mut output[prev.start..prev.start + prev.len]));
            copy_both(drain, (&input[start..start + chunk.len], stage_in), threads);
            stats.host_copy += copying.elapsed();
            if let Some((prev, _)) = previous {
                done += prev.len;
                progress(done, total);
            }
            // Enqueue the chunk: upload, the caller's kernels, download.
            let s = &lane.stream;
            s.copy(slot.input.slice(..chunk.len), lane.dev_in.slice_mut(..chunk.len))?;
            kernel(s, lane.dev_in.slice(..chunk.len), lane.dev_out.slice_mut(..chunk.len), chunk)?;
            s.copy(lane.dev_out.slice(..chunk.len), slot.output.slice_mut(..chunk.len))?;
            slot.pending = Some(chunk);
            stats.chunks += 1;
        }
        // Copy out the chunks still in flight, in order.
        let mut last: Vec<(usize, usize, usize)> = Vec::new();
        for (l, lane) in self.lanes.iter().enumerate() {
            for (j, slot) in lane.slots.iter().enumerate() {
                if let Some(c) = slot.pending {
                    last.push((c.index, l, j));
                }
            }
        }
        last.sort_unstable();
        for (_, l, j) in last {
            let slot = &mut self.lanes[l].slots[j];
            let Some(c) = slot.pending.take() else { continue };
            let waited = Instant::now();
            let staged = &slot.output.as_slice()?[..c.len];
            let copying = Instant::now();
            stats.gpu_wait += copying - waited;
            copy_par(staged, &mut output[c.start..c.start + c.len], threads);
            stats.host_copy += copying.elapsed();
            done += c.len;
            progress(done, total);
        }
        stats.elapsed = started.elapsed();
        Ok(stats)
    }
}

/// Copies `src` into `dst` (same length) on up to `threads` threads.
fn copy_par<V: Copy + Send + Sync>(src: &[V], dst: &mut [V], threads: usize) {
    copy_both::<V, V>(None, (src, dst), threads);
}

/// Both copies (each pair the same length) at once, split over up to `threads` threads:
/// each thread copies its share of each.
fn copy_both<A, B>(first: Option<(&[A], &mut [A])>, second: (&[B], &mut [B]), threads: usize)
where
    A: Copy + Send + Sync,
    B: Copy + Send + Sync,
{
    let bytes = first.as_ref().map_or(0, |(s, _)| size_of_val(*s)) + size_of_val(second.0);
    let threads = threads.min(bytes / MIN_BYTES_PER_THREAD).max(1);
    if threads == 1 {
        if let Some((s, d)) = first {
            d.copy_from_slice(s);
        }
        second.1.copy_from_slice(second.0);
        return;
    }
    /// The `t`-th of `threads` near-equal parts of `0..len`.
    fn part(len: usize, t: usize, threads: usize) -> std::ops::Range<usize> {
        len * t / threads..len * (t + 1) / threads
    }
    let split = |len: usize| (0..threads).map(move |t| part(len, t, threads));
    std::thread::scope(|scope| {
        let mut firsts: Vec<Option<(&[A], &mut [A])>> = Vec::with_capacity(threads);
        match first {
            Some((s, mut d)) => {
                for r in split(s.len()) {
                    let (head, tail) = std::mem::take(&mut d).split_at_mut(r.len());
                    d = tail;
                    firsts.push(Some((&s[r], head)));
                }
            }
            None => firsts.resize_with(threads, || None),
        }
        let (src, mut dst) = second;
        for (r, f) in split(src.len()).zip(firsts) {
            let (head, tail) = std::mem::take(&mut dst).split_at_mut(r.len());
            dst = tail;
            let s = &src[r];
            scope.spawn(move || {
                if let Some((fs, fd)) = f {
                    fd.copy_from_slice(fs);
                }
                head.copy_from_slice(s);
            });
        }
    });
}

#[cfg(test)]
mod tests {
    use super::copy_both;

    #[test]
    fn parallel_copies_cover_every_element_once() {
        for (n, m, threads) in [(0usize, 0usize, 4usize), (10, 3, 1), (3 << 20, 5 << 19, 3), (1 << 21, 0, 8)] {
            let a: Vec<u32> = (0..n as u32).collect();
            let b: Vec<u64> = (0..m as u64).map(|x| x * 3).collect();
            let mut da = vec![u32::MAX; n];
            let mut db = vec![u64::MAX; m];
            copy_both(Some((&b[..], &mut db[..])), (&a[..], &mut da[..]), threads);
            assert_eq!(da, a);
            assert_eq!(db, b);
        }
    }
}
