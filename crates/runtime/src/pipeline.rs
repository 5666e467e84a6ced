//! Streaming a host array through the GPU in chunks: [`Pipeline`] (its docs, re-exported at the
//! crate root, say which of its two ways in reaches which bound).

use std::time::{Duration, Instant};

use cohort::DeviceCopy;
use rayon::prelude::*;

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

/// What a [`Pipeline::run`] or [`Pipeline::run_pinned`] did, for reporting throughput and
/// where the host spent its time.
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
    /// Wall time of the whole run, from the first chunk to the last output in place.
    pub elapsed: Duration,
    /// Host time copying between the caller's arrays and the staging buffers (zero for
    /// [`Pipeline::run_pinned`], which copies nothing on the host).
    pub host_copy: Duration,
    /// Host time waiting for the GPU to release a staging slot or a stream (or to finish, at
    /// the end).
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

/// One stream's resources: the stream, its device chunks and, once [`Pipeline::run`] has
/// allocated them, its two staging slots.
struct Lane<T: DeviceCopy, U: DeviceCopy> {
    stream: Stream,
    dev_in: DeviceBuffer<T>,
    dev_out: DeviceBuffer<U>,
    /// Empty until the first [`Pipeline::run`]; then two slots.
    slots: Vec<Slot<T, U>>,
}

/// A staging slot: pinned input and output of one chunk, and the chunk whose output it holds
/// (or will hold, once its download finishes) until copied out.
struct Slot<T: DeviceCopy, U: DeviceCopy> {
    input: PinnedBuffer<T>,
    output: PinnedBuffer<U>,
    pending: Option<Chunk>,
}

/// Processes a host array in chunks — host → device copy, the caller's kernels, device → host
/// copy — on several streams at once: the overlap of NVIDIA's "How to Overlap Data Transfers
/// in CUDA C/C++", packaged. The result is the same as processing the whole array at once; one
/// chunk's upload, another's kernel and a third's download run at the same time on the GPU's
/// copy engines and SMs. The arrays can be far larger than GPU memory: only one chunk per
/// stream lives on the device.
///
/// Two ways in ([below](#which-path-reaches-which-bound): which reaches which bound):
///
/// - [`Pipeline::run`] for ordinary (pageable) arrays, which the GPU cannot copy
///   asynchronously: the pipeline stages them through page-locked buffers, two slots per
///   stream (double buffering), allocated by the first run and kept. While the GPU works on
///   the chunks queued on the other streams, the host copies finished outputs out of one
///   stream's slots and the next inputs into them — each copy split over a pool of host
///   threads ([`Pipeline::host_threads`]), the copy-out of one chunk and the copy-in of the
///   next at once. Taking a slot back waits for that slot's previous use through the staging
///   buffers' own stream-ordered tracking ([`PinnedBuffer::as_mut_slice`]), never for the
///   whole device.
/// - [`Pipeline::run_pinned`] for arrays already in pinned memory: the copy engines read and
///   write them directly, with no staging and no host copies.
///
/// Either way the host waits for a stream up to its latest operation, so chunk `k` runs on
/// stream `(k / 2) % N`: a stream takes two consecutive chunks, one wait gives both back, and
/// meanwhile the other `N - 1` streams' `2(N - 1)` chunks keep the GPU busy.
///
/// | CUDA C++ (the article) | [`Pipeline`] |
/// |---|---|
/// | `cudaMallocHost` of the whole array | [`Pipeline::run`]: two pinned staging slots per stream, of one chunk each; [`Pipeline::run_pinned`]: the caller's [`PinnedBuffer`]s |
/// | `cudaMalloc` of the whole array | one device input and one output chunk per stream |
/// | `for i: cudaMemcpyAsync(H2D, s[i]); kernel<<<…, s[i]>>>; cudaMemcpyAsync(D2H, s[i])` | [`Pipeline::run`] or [`Pipeline::run_pinned`], the launch in its closure |
/// | `cudaDeviceSynchronize()` at the end | done by the run before it returns |
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
///
/// // The same from and into pinned memory: no staging, no host copies.
/// let pinned_in = gpu.pinned_from(&input)?;
/// let mut pinned_out = gpu.pinned::<f32>(input.len())?;
/// let stats = pipe.run_pinned(&pinned_in, &mut pinned_out, |stream, input, output, chunk| {
///     add_one.launch(stream, LaunchConfig::for_elements(chunk.len, 256), input, output)
/// })?;
/// assert!(pinned_out.as_slice()?.iter().all(|&x| x == 2.0));
/// println!("{:.1} GB/s", stats.input_gbs());
/// # Ok(()) }
/// ```
///
/// # Which path reaches which bound
///
/// One pipeline — its streams and its device chunks — serves two ways in:
///
/// - [`Pipeline::run`] takes ordinary (pageable) slices, `&[T]` and `&mut [U]`. The GPU copies
///   pageable memory only synchronously, so the host copies each chunk into pinned staging and
///   each result out of it: besides the transfer itself, every byte is read and written once
///   more by a CPU core. Its bound is the *lower* of two: the next item's transfer bound, and the
///   host's copy rate over `input bytes + output bytes`, the copies spread over
///   [`Pipeline::host_threads`] cores (by default every core, at most 16) and competing for
///   host memory with the copy engines. Where the cores copy less than twice what the link
///   moves each way, the host is the bottleneck: [`PipelineStats::host_copy`] close to
///   [`PipelineStats::elapsed`] says so.
/// - [`Pipeline::run_pinned`] takes [`PinnedBuffer`]s: the copy engines read each chunk
///   straight from the caller's input and write each result straight into the caller's output.
///   Nothing is staged and no host thread copies, so it reaches the copy-engine bound: uploads
///   and downloads run at the same time on separate engines, and the run takes about
///   `max(input bytes / H2D rate, output bytes / D2H rate)`, plus one chunk's upload and one's
///   download to fill and drain the pipeline.
///
/// Use [`Pipeline::run_pinned`] when the data lives in pinned memory anyway: read from a file
/// or a socket into a [`PinnedBuffer`], produced or consumed there by other GPU work, or
/// allocated pinned from the start because it is streamed more than once. Page-locked memory
/// cannot be swapped, and the OS limits how much a process may lock. Use [`Pipeline::run`] for
/// data held in `Vec`s and slices: copying such an array into a pinned buffer first costs the
/// same host copies the staging does, without overlapping them with the GPU's work. Either
/// way, write the output array once before the run (a fresh `vec![0.0; n]` is not yet backed
/// by memory): otherwise the run also pays the OS's first-touch page faults.
///
/// Measured with `cohort pipeline` on an H200 over PCIe 5, next to the pinned copy rate each
/// way alone: the figures for both paths are to be filled in from the GPU run.
pub struct Pipeline<T: DeviceCopy, U: DeviceCopy> {
    gpu: Gpu,
    lanes: Vec<Lane<T, U>>,
    chunk_len: usize,
    host_threads: usize,
    /// The threads of [`Pipeline::run`]'s staging copies: started by the first run that needs
    /// them, kept for the next.
    pool: Option<rayon::ThreadPool>,
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

/// Default number of host threads for the staging copies, at most: beyond this, a copy of one
/// chunk is split too thinly to gain.
const MAX_DEFAULT_THREADS: usize = 16;

/// Smallest piece of a staging copy that one thread takes (and below which the whole copy runs
/// on the calling thread): large enough that one `memcpy` call streams at full speed.
const MIN_PIECE_BYTES: usize = 1 << 20;

impl<T, U> Pipeline<T, U>
where
    T: DeviceCopy + Send + Sync,
    U: DeviceCopy + Send + Sync,
{
    /// A pipeline of `streams` non-blocking streams and chunks of `chunk_len` elements:
    /// allocates, per stream, a device input and output chunk. The pinned staging of
    /// [`Pipeline::run`] (two slots per stream, input and output each) is allocated by its
    /// first call; [`Pipeline::run_pinned`] needs none.
    ///
    /// Use two streams or more: with one, the host waits for the stream's both chunks before
    /// queueing the next, so the host's work and the GPU's alternate instead of overlapping,
    /// and uploads and downloads never run at once.
    ///
    /// Host copies between the caller's arrays and the staging slots use
    /// [`std::thread::available_parallelism`] threads, at most 16 (see
    /// [`Pipeline::host_threads`]).
    ///
    /// # Errors
    /// [`Error::Argument`] for zero streams or a zero chunk length; out of device memory; a
    /// driver failure.
    pub fn new(gpu: &Gpu, streams: usize, chunk_len: usize) -> Result<Self> {
        if streams == 0 || chunk_len == 0 {
            return Err(Error::Argument(format!(
                "Pipeline: needs at least one stream and one element per chunk (got {streams} streams, chunks of \
                 {chunk_len})"
            )));
        }
        let lanes = (0..streams)
            .map(|_| {
                Ok(Lane {
                    stream: gpu.new_stream_with(StreamOptions::new().non_blocking(true))?,
                    // SAFETY: each run writes a chunk's `len` elements (the upload) before the
                    // closure reads them, and the closure is handed only those `len` elements.
                    dev_in: unsafe { DeviceBuffer::uninit(gpu, chunk_len)? },
                    // Zeroed: the closure may read its output view before writing it.
                    dev_out: gpu.zeroed(chunk_len)?,
                    slots: Vec::new(),
                })
            })
            .collect::<Result<Vec<_>>>()?;
        let threads = std::thread::available_parallelism().map_or(1, |n| n.get()).min(MAX_DEFAULT_THREADS);
        Ok(Self { gpu: gpu.clone(), lanes, chunk_len, host_threads: threads, pool: None })
    }

    /// Sets how many threads copy between the caller's arrays and the staging buffers of
    /// [`Pipeline::run`] (at least 1; 1 copies on the calling thread). One thread copies
    /// ~10 GB/s on a typical server, well below what a PCIe 5 or NVLink-C2C link moves each
    /// way, and each byte is copied on the host once per direction: the staging copies bound
    /// the throughput unless they are spread over many cores. The threads are a pool of the
    /// pipeline's own, started by the next run and kept (idle, asleep) between runs; if they
    /// cannot be started, the copies run on the calling thread.
    #[must_use]
    pub fn host_threads(mut self, threads: usize) -> Self {
        let threads = threads.max(1);
        if threads != self.host_threads {
            self.pool = None;
        }
        self.host_threads = threads;
        self
    }

    /// Number of threads copying to and from the staging of [`Pipeline::run`] (see
    /// [`Pipeline::host_threads`]).
    #[must_use]
    pub fn host_thread_count(&self) -> usize {
        self.host_threads
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

    /// Bytes of pinned host memory [`Pipeline::run`] stages through (allocated by its first
    /// call and kept; [`Pipeline::run_pinned`] needs none).
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

    /// Runs `kernel` over `input` into `output` (same length) chunk by chunk, through pinned
    /// staging, and returns once every chunk's output is in `output`.
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
    /// The first call allocates the staging ([`Pipeline::pinned_bytes`]) and starts the copy
    /// threads ([`Pipeline::host_threads`]).
    ///
    /// # Errors
    /// [`Error::Argument`] if the lengths differ; out of pinned memory (first call); what
    /// `kernel` returns (the run stops there: part of `output` may be written); a driver
    /// failure, or a kernel that failed.
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
        check_lengths(input.len(), output.len())?;
        self.allocate_staging()?;
        self.start_threads();
        let total = input.len();
        let started = Instant::now();
        let mut stats = PipelineStats {
            elements: total,
            input_bytes: size_of_val(input),
            output_bytes: size_of_val(output),
            ..PipelineStats::default()
        };
        let Self { lanes, chunk_len, pool, .. } = self;
        let (chunk_len, pool, streams) = (*chunk_len, pool.as_ref(), lanes.len());
        // A failed earlier run may have left outputs behind: forget them.
        for lane in lanes.iter_mut() {
            for slot in &mut lane.slots {
                slot.pending = None;
            }
        }
        let mut done = 0;
        for (index, start) in (0..total).step_by(chunk_len).enumerate() {
            let chunk = Chunk { index, start, len: chunk_len.min(total - start) };
            let lane = &mut lanes[(index / 2) % streams];
            let slot = &mut lane.slots[index % 2];
            // Take the slot back: wait for its previous chunk's download (and so for its
            // upload), then copy that chunk's output out and this chunk's input in, at once.
            let waited = Instant::now();
            let previous = match slot.pending.take() {
                Some(prev) => Some((prev, &slot.output.as_slice()?[..prev.len])),
                None => None,
            };
            let stage_in = &mut slot.input.as_mut_slice()?[..chunk.len];
            let copying = Instant::now();
            stats.gpu_wait += copying - waited;
            let drain = previous.map(|(prev, staged)| (staged, &mut output[prev.start..prev.start + prev.len]));
            copy_both(pool, drain, (&input[start..start + chunk.len], stage_in));
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
        for (l, lane) in lanes.iter().enumerate() {
            for (j, slot) in lane.slots.iter().enumerate() {
                if let Some(c) = slot.pending {
                    last.push((c.index, l, j));
                }
            }
        }
        last.sort_unstable();
        for (_, l, j) in last {
            let slot = &mut lanes[l].slots[j];
            let Some(c) = slot.pending.take() else { continue };
            let waited = Instant::now();
            let staged = &slot.output.as_slice()?[..c.len];
            let copying = Instant::now();
            stats.gpu_wait += copying - waited;
            copy_both::<U, U>(pool, None, (staged, &mut output[c.start..c.start + c.len]));
            stats.host_copy += copying.elapsed();
            done += c.len;
            progress(done, total);
        }
        stats.elapsed = started.elapsed();
        Ok(stats)
    }

    /// Runs `kernel` over `input` into `output` (pinned, same length) chunk by chunk; see
    /// [`Pipeline::run_pinned_with_progress`].
    ///
    /// # Errors
    /// As [`Pipeline::run_pinned_with_progress`].
    pub fn run_pinned<K>(
        &mut self,
        input: &PinnedBuffer<T>,
        output: &mut PinnedBuffer<U>,
        kernel: K,
    ) -> Result<PipelineStats>
    where
        K: FnMut(&Stream, DeviceView<'_, T>, DeviceViewMut<'_, U>, Chunk) -> Result<()>,
    {
        self.run_pinned_with_progress(input, output, kernel, |_, _| {})
    }

    /// As [`Pipeline::run_with_progress`], from and into pinned memory: each chunk is uploaded
    /// straight from its part of `input` and downloaded straight into its part of `output` —
    /// no staging, no host copies — and the run returns once every chunk's output is in
    /// `output`. The host only enqueues and waits, so the run reaches the copy-engine bound:
    /// see [which path reaches which bound](Pipeline#which-path-reaches-which-bound).
    ///
    /// `kernel` and `progress` are called as by [`Pipeline::run_with_progress`]; `progress`
    /// each time a chunk's download has finished.
    ///
    /// The buffers' stream-ordered tracking orders the run after GPU work still writing
    /// `input` (or still using `output`) on other streams; on return, `output` is ready to
    /// read without waiting. The buffers may be larger than GPU memory, and far larger than
    /// the chunks: the device holds one chunk per stream.
    ///
    /// # Errors
    /// [`Error::Argument`] if the lengths differ; what `kernel` returns (the run stops there:
    /// part of `output` may be written, or still being written: its host view waits for
    /// that); a driver failure, or a kernel that failed.
    pub fn run_pinned_with_progress<K, P>(
        &mut self,
        input: &PinnedBuffer<T>,
        output: &mut PinnedBuffer<U>,
        mut kernel: K,
        mut progress: P,
    ) -> Result<PipelineStats>
    where
        K: FnMut(&Stream, DeviceView<'_, T>, DeviceViewMut<'_, U>, Chunk) -> Result<()>,
        P: FnMut(usize, usize),
    {
        check_lengths(input.len(), output.len())?;
        let total = input.len();
        let started = Instant::now();
        let mut stats = PipelineStats {
            elements: total,
            input_bytes: total * size_of::<T>(),
            output_bytes: total * size_of::<U>(),
            ..PipelineStats::default()
        };
        let (chunk_len, streams) = (self.chunk_len, self.lanes.len());
        // Per stream, the chunks queued on it since the host last waited for it (two at most).
        let mut queued: Vec<Vec<Chunk>> = vec![Vec::with_capacity(2); streams];
        let mut done = 0;
        let mut finish = |lane: &Lane<T, U>, chunks: &mut Vec<Chunk>, stats: &mut PipelineStats| -> Result<()> {
            let waited = Instant::now();
            lane.stream.synchronize()?;
            stats.gpu_wait += waited.elapsed();
            for c in chunks.drain(..) {
                done += c.len;
                progress(done, total);
            }
            Ok(())
        };
        for (index, start) in (0..total).step_by(chunk_len).enumerate() {
            let chunk = Chunk { index, start, len: chunk_len.min(total - start) };
            let l = (index / 2) % streams;
            let lane = &mut self.lanes[l];
            // Before a stream's next pair of chunks, wait for its previous pair: the oldest
            // chunks in flight, while the other streams' keep the copy engines busy.
            if index % 2 == 0 && !queued[l].is_empty() {
                finish(lane, &mut queued[l], &mut stats)?;
            }
            let range = start..start + chunk.len;
            let s = &lane.stream;
            s.copy(input.slice(range.clone()), lane.dev_in.slice_mut(..chunk.len))?;
            kernel(s, lane.dev_in.slice(..chunk.len), lane.dev_out.slice_mut(..chunk.len), chunk)?;
            s.copy(lane.dev_out.slice(..chunk.len), output.slice_mut(range))?;
            queued[l].push(chunk);
            stats.chunks += 1;
        }
        // The chunks still in flight, in order: each stream's queue holds consecutive chunks.
        let mut order: Vec<usize> = (0..streams).filter(|&l| !queued[l].is_empty()).collect();
        order.sort_unstable_by_key(|&l| queued[l][0].index);
        for l in order {
            finish(&self.lanes[l], &mut queued[l], &mut stats)?;
        }
        stats.elapsed = started.elapsed();
        Ok(stats)
    }

    /// Allocates the staging slots of [`Pipeline::run`], if not yet done.
    fn allocate_staging(&mut self) -> Result<()> {
        for lane in &mut self.lanes {
            while lane.slots.len() < 2 {
                let input = self.gpu.pinned(self.chunk_len)?;
                let output = self.gpu.pinned(self.chunk_len)?;
                lane.slots.push(Slot { input, output, pending: None });
            }
        }
        Ok(())
    }

    /// Starts the pool of copy threads, if more than one is asked for and none runs yet (if
    /// they cannot be started, the copies run on the calling thread).
    fn start_threads(&mut self) {
        if self.host_threads > 1 && self.pool.is_none() {
            self.pool = rayon::ThreadPoolBuilder::new()
                .num_threads(self.host_threads)
                .thread_name(|i| format!("cohort-pipeline-{i}"))
                .build()
                .ok();
        }
    }
}

/// [`Error::Argument`] unless the input and output lengths are the same.
fn check_lengths(input: usize, output: usize) -> Result<()> {
    if input == output {
        return Ok(());
    }
    Err(Error::Argument(format!("Pipeline: the input has {input} elements, the output {output}")))
}

/// Both copies (each pair the same length) at once on `pool`'s threads, each split into
/// contiguous pieces of about an equal share per thread (at least [`MIN_PIECE_BYTES`]), which
/// idle threads take from busy ones; on the calling thread without a pool, or when small.
fn copy_both<A, B>(pool: Option<&rayon::ThreadPool>, first: Option<(&[A], &mut [A])>, second: (&[B], &mut [B]))
where
    A: Copy + Send + Sync,
    B: Copy + Send + Sync,
{
    let bytes = first.as_ref().map_or(0, |(s, _)| size_of_val(*s)) + size_of_val(second.0);
    match pool {
        Some(pool) if bytes > MIN_PIECE_BYTES => pool.install(|| {
            let threads = pool.current_num_threads();
            rayon::join(
                || {
                    if let Some((s, d)) = first {
                        copy_pieces(s, d, threads);
                    }
                },
                || copy_pieces(second.0, second.1, threads),
            );
        }),
        _ => {
            if let Some((s, d)) = first {
                d.copy_from_slice(s);
            }
            second.1.copy_from_slice(second.0);
        }
    }
}

/// Copies `src` into `dst` (same length) in pieces of a `threads`-th of it (or
/// [`MIN_PIECE_BYTES`] if more), in parallel on the current pool.
fn copy_pieces<V: Copy + Send + Sync>(src: &[V], dst: &mut [V], threads: usize) {
    let min = MIN_PIECE_BYTES.div_ceil(size_of::<V>().max(1));
    let piece = src.len().div_ceil(threads.max(1)).max(min).max(1);
    dst.par_chunks_mut(piece).zip(src.par_chunks(piece)).for_each(|(d, s)| d.copy_from_slice(s));
}

#[cfg(test)]
mod tests {
    use super::copy_both;

    #[test]
    fn parallel_copies_cover_every_element_once() {
        let pools: Vec<Option<rayon::ThreadPool>> = [1usize, 3, 8]
            .iter()
            .map(|&t| (t > 1).then(|| rayon::ThreadPoolBuilder::new().num_threads(t).build().unwrap()))
            .collect();
        for pool in &pools {
            for (n, m) in [(0usize, 0usize), (10, 3), (3 << 20, 5 << 19), (1 << 21, 0), (0, (1 << 20) + 7)] {
                let a: Vec<u32> = (0..n as u32).collect();
                let b: Vec<u64> = (0..m as u64).map(|x| x * 3).collect();
                let mut da = vec![u32::MAX; n];
                let mut db = vec![u64::MAX; m];
                copy_both(pool.as_ref(), Some((&b[..], &mut db[..])), (&a[..], &mut da[..]));
                assert_eq!(da, a);
                assert_eq!(db, b);
                let mut again = vec![u32::MAX; n];
                copy_both::<u32, u32>(pool.as_ref(), None, (&a[..], &mut again[..]));
                assert_eq!(again, a);
            }
        }
    }
}
