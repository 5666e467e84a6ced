//! `cohort managed`: the managed-memory program of NVIDIA's Cooperative Groups blog post
//! ("Cooperative Groups: Flexible CUDA Thread Programming", 2017), ported:
//!
//! ```text
//! int *sum, *data;
//! cudaMallocManaged(&sum, sizeof(int));
//! cudaMallocManaged(&data, n * sizeof(int));
//! std::fill_n(data, n, 1); // initialize data
//! cudaMemset(sum, 0, sizeof(int));
//! sum_kernel_block<<<nBlocks, blockSize, sharedBytes>>>(sum, data, n);
//! ```
//!
//! Here `data` and `sum` are `ManagedBuffer`s: the host fills `data` in place through
//! `as_mut_slice`, the kernel (`cohort_kernels::memory::sum_kernel_block`: `int4` thread sums, a
//! tree over the block through dynamic shared memory, one atomic add per block) takes them as
//! `&[i32x4]` and `&[AtomicI32]`, and the host reads `sum` in place through `as_slice`, which
//! waits for the kernel first. It runs twice: as the blog does (pages migrate on demand), and
//! with prefetches (`data` to the device before the kernel, `sum` to the host after). Every sum
//! is checked (`n`). Without a GPU it runs on the CPU device, where managed memory is host
//! memory.

use std::time::Instant;

use cohort_kernels::PTX;
use cohort_kernels::memory::sum_kernel_block;
use cohort_runtime::{Event, Gpu, LaunchConfig, Location, ManagedBuffer};

use crate::util::{self, CliError, CliResult};

/// `cohort managed`'s options.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Ints to sum (a multiple of 4; k, M, G suffixes) [default: 16M, 1M on the CPU device]
    #[arg(long, value_parser = util::parse_positive)]
    pub n: Option<usize>,
    /// Where the kernel runs.
    #[command(flatten)]
    pub device: util::DeviceArgs,
}

/// The program's buffers and kernel.
pub(crate) struct Program {
    kernel: sum_kernel_block,
    sum: ManagedBuffer<i32>,
    data: ManagedBuffer<i32>,
    start: Event,
    end: Event,
}

/// One run's figures.
pub(crate) struct Run {
    /// What `sum[0]` held afterwards.
    pub sum: i32,
    /// The kernel, between events (ms).
    pub kernel_ms: f64,
    /// The whole run on the host's clock: fill, (prefetch,) kernel, read (ms).
    pub total_ms: f64,
}

impl Program {
    /// Loads the kernel and allocates `n` ints and the sum in managed memory.
    pub(crate) fn new(gpu: &Gpu, n: usize) -> CliResult<Self> {
        if n == 0 || !n.is_multiple_of(4) || n > i32::MAX as usize {
            return Err(CliError::Usage("--n must be a positive multiple of 4 below 2^31".into()));
        }
        let module = gpu.load(&PTX)?;
        Ok(Self {
            kernel: sum_kernel_block::load(&module)?,
            sum: ManagedBuffer::new(gpu, 1)?,
            data: ManagedBuffer::new(gpu, n)?,
            start: Event::new(gpu)?,
            end: Event::new(gpu)?,
        })
    }

    /// The blog's `main`, once: fill on the host, clear the sum, launch, read the sum.
    pub(crate) fn run(&mut self, gpu: &Gpu, prefetch: bool) -> CliResult<Run> {
        let n = self.data.len();
        let block = 256u32;
        let blocks = u32::try_from(n.div_ceil(block as usize)).map_err(|_| CliError::Usage("--n too large".into()))?;
        let config = LaunchConfig::new(blocks, block).with_shared_mem(block * 4);
        let s = gpu.stream();
        let t = Instant::now();
        self.data.as_mut_slice()?.fill(1); // initialize data
        self.sum.as_mut_slice()?[0] = 0;
        if prefetch {
            self.data.prefetch(s, Location::Device)?;
        }
        let input = self.data.slice(..).cast::<cohort::vec::i32x4>().expect("n is a multiple of 4");
        self.start.record(s)?;
        self.kernel.launch(s, config, &mut self.sum, input)?;
        self.end.record(s)?;
        if prefetch {
            self.sum.prefetch(s, Location::Host)?;
        }
        let sum = self.sum.as_slice()?[0];
        let total_ms = t.elapsed().as_secs_f64() * 1e3;
        self.end.synchronize()?;
        let kernel_ms = f64::from(self.end.elapsed_ms_since(&self.start)?);
        if sum != n as i32 {
            return Err(CliError::Failed(format!("sum_kernel_block summed {n} ones to {sum}")));
        }
        Ok(Run { sum, kernel_ms, total_ms })
    }
}

pub fn run(args: Args) -> CliResult {
    let (gpu, note) = util::device(args.device.device)?;
    if let Some(line) = &note {
        println!("{line}");
    }
    let n = args.n.unwrap_or(if gpu.is_cpu() { 1 << 20 } else { 1 << 24 });
    println!("{}", gpu.info());
    let mut program = Program::new(&gpu, n)?;
    println!("sum_kernel_block over {n} ints of managed memory, blocks of 256, 1 KiB of dynamic shared memory each");
    for prefetch in [false, true] {
        let r = program.run(&gpu, prefetch)?;
        let how = if prefetch { "with prefetches" } else { "on-demand migration" };
        if gpu.is_cpu() {
            println!("  {how:<20} sum = {} (expected {n}): ok", r.sum);
        } else {
            println!(
                "  {how:<20} sum = {} (expected {n}): ok; kernel {:.3} ms, fill + kernel + read {:.3} ms",
                r.sum, r.kernel_ms, r.total_ms
            );
        }
    }
    Ok(())
}
