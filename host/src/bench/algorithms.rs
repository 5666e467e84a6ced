//! `cohort bench algorithms`: the device-wide algorithms of `cohort-algorithms` (reduce, scan,
//! select, partition, unique, run-length encode, radix sort, histogram, segmented reduce,
//! argmax) beside CUB's, on the same buffers and stream,
//! timed in interleaved pairs (medians), as GB/s and as a fraction of DRAM bandwidth (an
//! H200's 4.8 TB/s by default). CUB comes from `host/benches/algorithms_cub.cu`, built on the
//! GPU machine as a shared library:
//!
//! ```text
//! nvcc -O3 -arch=sm_90 -std=c++17 -shared -Xcompiler -fPIC -o libalgorithms_cub.so host/benches/algorithms_cub.cu
//! cohort bench algorithms --cub ./libalgorithms_cub.so
//! ```
//!
//! Without `--cub` only the Rust side runs. Every result of both sides is checked element by
//! element against the CPU. Inputs (the same for both): `hash(i)` (splitmix64's finalizer)
//! for reduce and scan; select-if keeps `x < 2^31` (half); select-flagged's flags are
//! `hash(i) >> 31`; unique and run-length encode see runs of 4 (`hash(i / 4)`); radix sort
//! sorts `hash(i)` (u32 keys) or `hash64(i)` (u64 keys), with the indices `i` as values (the
//! Rust sort is in place: each timed run starts from a copy of the input made untimed; CUB's
//! is `DeviceRadixSort::SortKeys` / `SortPairs` from the input to another buffer); the histogram
//! counts `hash(i) >> 8` (every sample in one of 256 even bins of `[0, 2^24)`); the segmented
//! reduce sums the reduce's floats in segments of 10^3, 10^5 and 10^7 elements (the last one
//! shorter); argmax looks for the first largest of those floats (each value occurs ~16 times at
//! 2^28). The Rust side also runs on the CPU device (`COHORT_DEVICE=cpu`, small `--sizes`), as a
//! smoke test.

use std::ffi::c_void;

use cohort_algorithms::{Algorithms, LessThan, RadixBits, Sum, Temp};
use cohort_runtime::{DeviceBuffer, Gpu, Stream};

use crate::timing::{Paired, Phase, median_ms, paired_ms};
use crate::util::{CliError, CliResult, Table};

/// `cohort bench algorithms`' options.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Input sizes as powers of two
    #[arg(long, value_delimiter = ',', default_value = "20,24,28")]
    pub sizes: Vec<u32>,
    /// Timed pairs per algorithm and size (the medians are reported)
    #[arg(long, default_value = "20")]
    pub reps: usize,
    /// The GPU's DRAM bandwidth in TB/s (default: an H200's 4.8)
    #[arg(long, default_value = "4.8")]
    pub dram_tbs: f64,
    /// CUB's side: the shared library built from host/benches/algorithms_cub.cu (see the module docs)
    #[arg(long, value_name = "LIB")]
    pub cub: Option<std::path::PathBuf>,
}

/// The algorithms, in the CUB library's numbering.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Algo {
    ReduceU32 = 0,
    ReduceF32 = 1,
    ExclusiveU32 = 2,
    InclusiveU32 = 3,
    SelectIf = 4,
    SelectFlagged = 5,
    PartitionIf = 6,
    Unique = 7,
    Rle = 8,
    SortKeysU32 = 9,
    SortPairsU32 = 10,
    SortKeysU64 = 11,
    SortPairsU64 = 12,
    HistogramU32 = 13,
    SegSum1e3 = 14,
    SegSum1e5 = 15,
    SegSum1e7 = 16,
    ArgMaxF32 = 17,
}

impl Algo {
    const ALL: [Algo; 18] = [
        Algo::ReduceU32,
        Algo::ReduceF32,
        Algo::ExclusiveU32,
        Algo::InclusiveU32,
        Algo::SelectIf,
        Algo::SelectFlagged,
        Algo::PartitionIf,
        Algo::Unique,
        Algo::Rle,
        Algo::SortKeysU32,
        Algo::SortPairsU32,
        Algo::SortKeysU64,
        Algo::SortPairsU64,
        Algo::HistogramU32,
        Algo::SegSum1e3,
        Algo::SegSum1e5,
        Algo::SegSum1e7,
        Algo::ArgMaxF32,
    ];
    fn name(self) -> &'static str {
        match self {
            Algo::ReduceU32 => "reduce sum u32 (DeviceReduce::Sum)",
            Algo::ReduceF32 => "reduce sum f32 (DeviceReduce::Sum)",
            Algo::ExclusiveU32 => "exclusive scan sum u32 (DeviceScan::ExclusiveSum)",
            Algo::InclusiveU32 => "inclusive scan sum u32 (DeviceScan::InclusiveSum)",
            Algo::SelectIf => "select-if u32, 50 % (DeviceSelect::If)",
            Algo::SelectFlagged => "select-flagged u32, 50 % (DeviceSelect::Flagged)",
            Algo::PartitionIf => "partition-if u32, 50 % (DevicePartition::If)",
            Algo::Unique => "unique u32, runs of 4 (DeviceSelect::Unique)",
            Algo::Rle => "run-length encode u32, runs of 4 (DeviceRunLengthEncode::Encode)",
            Algo::SortKeysU32 => "radix sort keys u32 (DeviceRadixSort::SortKeys)",
            Algo::SortPairsU32 => "radix sort pairs u32 → u32 (DeviceRadixSort::SortPairs)",
            Algo::SortKeysU64 => "radix sort keys u64 (DeviceRadixSort::SortKeys)",
            Algo::SortPairsU64 => "radix sort pairs u64 → u64 (DeviceRadixSort::SortPairs)",
            Algo::HistogramU32 => "histogram even u32, 256 bins (DeviceHistogram::HistogramEven)",
            Algo::SegSum1e3 => "segmented sum f32, segments of 10^3 (DeviceSegmentedReduce::Sum)",
            Algo::SegSum1e5 => "segmented sum f32, segments of 10^5 (DeviceSegmentedReduce::Sum)",
            Algo::SegSum1e7 => "segmented sum f32, segments of 10^7 (DeviceSegmentedReduce::Sum)",
            Algo::ArgMaxF32 => "argmax f32 (DeviceReduce::ArgMax)",
        }
    }

    /// The segment length of a segmented reduce.
    fn segment(self) -> Option<usize> {
        match self {
            Algo::SegSum1e3 => Some(1_000),
            Algo::SegSum1e5 => Some(100_000),
            Algo::SegSum1e7 => Some(10_000_000),
            _ => None,
        }
    }

    fn is_sort(self) -> bool {
        matches!(self, Algo::SortKeysU32 | Algo::SortPairsU32 | Algo::SortKeysU64 | Algo::SortPairsU64)
    }
}

type TempBytes = unsafe extern "C" fn(i32, i64) -> i64;
type RunFn = unsafe extern "C" fn(
    i32,
    *const c_void,
    *const c_void,
    *mut c_void,
    *mut c_void,
    *mut c_void,
    i64,
    *mut c_void,
    i64,
    *mut c_void,
) -> i32;

/// CUB's side: the library and its two entry points.
struct Cub {
    _lib: libloading::Library,
    temp_bytes: TempBytes,
    run: RunFn,
}

impl Cub {
    fn load(path: &std::path::Path) -> CliResult<Self> {
        let fail = |e: libloading::Error| CliError::Failed(format!("{}: {e}", path.display()));
        // SAFETY: loading runs the library's initializers: CUDA's runtime, statically linked by nvcc.
        let lib = unsafe { libloading::Library::new(path) }.map_err(fail)?;
        // SAFETY: the symbols' types are algorithms_cub.cu's `extern "C"` declarations.
        let (temp_bytes, run) = unsafe {
            (*lib.get::<TempBytes>(b"cub_temp_bytes\0").map_err(fail)?, *lib.get::<RunFn>(b"cub_run\0").map_err(fail)?)
        };
        Ok(Self { _lib: lib, temp_bytes, run })
    }
}

/// A CUB call's buffers (device addresses) and its stream.
struct CubCall {
    algo: Algo,
    input: u64,
    flags: u64,
    out: u64,
    out2: u64,
    num: u64,
    n: usize,
    temp: u64,
    temp_bytes: usize,
}

impl CubCall {
    fn run(&self, cub: &Cub, stream: &Stream) -> cohort_runtime::Result<()> {
        let p = |a: u64| a as *mut c_void;
        // SAFETY: every address is a live device buffer of the size the algorithm needs (the
        // caller's), the temporary storage holds `temp_bytes`, and the stream is live.
        let e = unsafe {
            (cub.run)(
                self.algo as i32,
                p(self.input),
                p(self.flags),
                p(self.out),
                p(self.out2),
                p(self.num),
                self.n as i64,
                p(self.temp),
                self.temp_bytes as i64,
                stream.cu_stream().cast(),
            )
        };
        if e != 0 {
            return Err(cohort_runtime::Error::Argument(format!("CUB {:?} failed: cudaError {e}", self.algo)));
        }
        Ok(())
    }
}

/// splitmix64's finalizer of `i`, low 32 bits.
fn hash(i: u64) -> u32 {
    let mut x = i.wrapping_add(0x9E37_79B9_7F4A_7C15);
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    (x ^ (x >> 31)) as u32
}

/// splitmix64's finalizer of `i`, all 64 bits.
fn hash64(i: u64) -> u64 {
    let mut x = i.wrapping_add(0x9E37_79B9_7F4A_7C15);
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^ (x >> 31)
}

fn fail(msg: String) -> CliError {
    CliError::Failed(msg)
}

/// The first index where `got` differs from `want`, as an error naming `what`.
fn same<T: PartialEq + std::fmt::Debug>(what: &str, got: &[T], want: &[T]) -> CliResult {
    if got.len() != want.len() {
        return Err(fail(format!("{what}: {} elements, want {}", got.len(), want.len())));
    }
    match got.iter().zip(want).position(|(a, b)| a != b) {
        Some(i) => Err(fail(format!("{what}: element {i} is {:?}, want {:?}", got[i], want[i]))),
        None => Ok(()),
    }
}

struct Row {
    name: String,
    n: usize,
    bytes: f64,
    rust: f64,
    cub: Option<Paired>,
}

pub fn run(args: Args) -> CliResult {
    let Args { sizes, reps, dram_tbs, cub } = args;
    let gpu = Gpu::from_env()?;
    if gpu.is_cpu() && cub.is_some() {
        return Err(CliError::Usage("--cub needs a GPU (the CPU device runs the Rust side only)".into()));
    }
    if sizes.iter().any(|&s| s > 31) {
        return Err(CliError::Usage("--sizes: powers of two up to 31 (CUB's side takes `int` sizes)".into()));
    }
    println!("{}", gpu.info());
    let cub = cub.as_deref().map(Cub::load).transpose()?;
    let algos = Algorithms::load(&gpu)?;
    println!(
        "cohort-algorithms{}; {reps} timed runs of each (medians{}); DRAM {dram_tbs} TB/s\n",
        if cub.is_some() { " beside CUB (same buffers, same stream)" } else { " alone (no --cub)" },
        if cub.is_some() {
            ", Rust and CUB interleaved in pairs; the ratio is the median of the pairs' ratios"
        } else {
            ""
        },
    );
    let mut rows = Vec::new();
    for &log in &sizes {
        let n = 1usize << log;
        bench_size(&gpu, &algos, cub.as_ref(), n, reps, &mut rows)?;
    }
    let head = ["algorithm", "n", "Rust", "CUB", "CUB / Rust (speed) [quartiles]", "Rust of DRAM", "CUB of DRAM"];
    let mut table = Table::new(&head).numeric(1..head.len());
    let gbs = |bytes: f64, ms: f64| bytes / ms / 1e6;
    for r in rows {
        let (cub_t, ratio, cub_frac) = match &r.cub {
            Some(p) => (
                format!("{:.3} ms ({:.0} GB/s)", p.b, gbs(r.bytes, p.b)),
                p.ratio_text(),
                format!("{:.2}", gbs(r.bytes, p.b) / (dram_tbs * 1e3)),
            ),
            None => ("—".into(), "—".into(), "—".into()),
        };
        table.row(vec![
            r.name,
            format!("2^{}", r.n.trailing_zeros()),
            format!("{:.3} ms ({:.0} GB/s)", r.rust, gbs(r.bytes, r.rust)),
            cub_t,
            ratio,
            format!("{:.2}", gbs(r.bytes, r.rust) / (dram_tbs * 1e3)),
            cub_frac,
        ]);
    }
    table.print();
    println!(
        "\nbytes: what the algorithm must read and write (reduce 4n; scans 8n; select/unique 4n + 4 per selected, \
         flagged + n, partition 8n; run-length encode 4n + 8 per run; radix sort one read and one write of the \
         keys and values: 8n u32 keys, 16n u32 pairs and u64 keys, 32n u64 pairs; histogram and argmax 4n; segmented \
         sum 4n + 12 per segment: its offset and sum); every result of both sides checked element by element against \
         the CPU (f32 sums within 1e-5 relative)"
    );
    Ok(())
}

#[allow(clippy::too_many_lines)]
fn bench_size(gpu: &Gpu, a: &Algorithms, cub: Option<&Cub>, n: usize, reps: usize, rows: &mut Vec<Row>) -> CliResult {
    let s = gpu.stream();
    let data: Vec<u32> = (0..n as u64).map(hash).collect();
    let floats: Vec<f32> = data.iter().map(|&x| (x >> 8) as f32 / (1 << 24) as f32).collect();
    let runs: Vec<u32> = (0..n as u64).map(|i| hash(i / 4)).collect();
    let flags: Vec<u8> = data.iter().map(|&x| (x >> 31) as u8).collect();
    let d_data = gpu.upload(&data)?;
    let d_floats = gpu.upload(&floats)?;
    let d_runs = gpu.upload(&runs)?;
    let d_flags = gpu.upload(&flags)?;
    let mut out = gpu.zeroed::<u32>(n)?;
    let mut out_c = gpu.zeroed::<u32>(n)?;
    let mut out2 = gpu.zeroed::<u32>(n)?;
    let mut out2_c = gpu.zeroed::<u32>(n)?;
    let mut count = gpu.zeroed::<u64>(1)?;
    let mut count_c = gpu.zeroed::<u64>(1)?;
    let mut sum_f32 = gpu.zeroed::<f32>(1)?;
    let mut temp = Temp::new(gpu);
    // Radix sort: the u64 keys, the values (indices), each side's outputs.
    let data64: Vec<u64> = (0..n as u64).map(hash64).collect();
    let idx32: Vec<u32> = (0..n as u32).collect();
    let idx64: Vec<u64> = (0..n as u64).collect();
    let d_data64 = gpu.upload(&data64)?;
    let d_idx32 = gpu.upload(&idx32)?;
    let d_idx64 = gpu.upload(&idx64)?;
    let mut sk32 = gpu.zeroed::<u32>(n)?;
    let mut sv32 = gpu.zeroed::<u32>(n)?;
    let mut sk64 = gpu.zeroed::<u64>(n)?;
    let mut sv64 = gpu.zeroed::<u64>(n)?;
    let mut ck32 = gpu.zeroed::<u32>(n)?;
    let mut cv32 = gpu.zeroed::<u32>(n)?;
    let mut ck64 = gpu.zeroed::<u64>(n)?;
    let mut cv64 = gpu.zeroed::<u64>(n)?;
    let cub_temp_bytes =
        // SAFETY: a size query (no device work).
        cub.map(|c| Algo::ALL.iter().map(|&x| unsafe { (c.temp_bytes)(x as i32, n as i64) }).max().unwrap_or(0));
    let mut cub_temp = match cub_temp_bytes {
        Some(b) => Some(gpu.zeroed::<u8>((b.max(1)) as usize)?),
        None => None,
    };
    let threshold = 1u32 << 31;
    // Histogram: every sample in one of the 256 bins of [0, 2^24).
    let hist_in: Vec<u32> = data.iter().map(|&x| x >> 8).collect();
    let d_hist_in = gpu.upload(&hist_in)?;
    let mut hist = gpu.zeroed::<u32>(256)?;
    let mut hist_c = gpu.zeroed::<u32>(256)?;
    // Argmax: the index and value of each side (CUB's value goes to `out_c[0]`, its index to
    // `count_c`).
    let mut arg_idx = gpu.zeroed::<u64>(1)?;
    let mut arg_val = gpu.zeroed::<f32>(1)?;

    for algo in Algo::ALL {
        // Segmented reduce: the offsets `min(i * len, n)` and each side's sums.
        let offsets: Vec<u64> = match algo.segment() {
            Some(len) => (0..=n.div_ceil(len)).map(|i| (i * len).min(n) as u64).collect(),
            None => vec![0],
        };
        let segments = offsets.len() - 1;
        let d_off = gpu.upload(&offsets)?;
        let mut seg_out = gpu.zeroed::<f32>(segments.max(1))?;
        let mut seg_out_c = gpu.zeroed::<f32>(segments.max(1))?;
        // References.
        let (input_addr, bytes): (u64, f64);
        let nf = n as f64;
        match algo {
            Algo::HistogramU32 => input_addr = d_hist_in.as_device_ptr().addr(),
            Algo::ReduceF32 | Algo::SegSum1e3 | Algo::SegSum1e5 | Algo::SegSum1e7 | Algo::ArgMaxF32 => {
                input_addr = d_floats.as_device_ptr().addr()
            }
            Algo::Unique | Algo::Rle => input_addr = d_runs.as_device_ptr().addr(),
            Algo::SortKeysU64 | Algo::SortPairsU64 => input_addr = d_data64.as_device_ptr().addr(),
            _ => input_addr = d_data.as_device_ptr().addr(),
        }
        let selected = data.iter().filter(|&&x| x < threshold).count() as f64;
        let flagged = flags.iter().filter(|&&f| f != 0).count() as f64;
        let run_count = runs.iter().enumerate().filter(|&(i, x)| i == 0 || runs[i - 1] != *x).count() as f64;
        bytes = match algo {
            Algo::ReduceU32 | Algo::ReduceF32 => 4.0 * nf,
            Algo::ExclusiveU32 | Algo::InclusiveU32 | Algo::PartitionIf => 8.0 * nf,
            Algo::SelectIf => 4.0 * nf + 4.0 * selected,
            Algo::SelectFlagged => 5.0 * nf + 4.0 * flagged,
            Algo::Unique => 4.0 * nf + 4.0 * run_count,
            Algo::Rle => 4.0 * nf + 8.0 * run_count,
            Algo::SortKeysU32 => 8.0 * nf,
            Algo::SortPairsU32 | Algo::SortKeysU64 => 16.0 * nf,
            Algo::SortPairsU64 => 32.0 * nf,
            Algo::HistogramU32 | Algo::ArgMaxF32 => 4.0 * nf,
            // The elements, the offsets, the sums.
            Algo::SegSum1e3 | Algo::SegSum1e5 | Algo::SegSum1e7 => 4.0 * nf + 12.0 * segments as f64 + 8.0,
        };
        let mut rust = |p: Phase| -> cohort_runtime::Result<()> {
            if p == Phase::Prep {
                // The sort is in place: each run starts from the input (untimed).
                return match algo {
                    Algo::SortKeysU32 => s.copy(&d_data, &mut sk32),
                    Algo::SortPairsU32 => s.copy(&d_data, &mut sk32).and_then(|()| s.copy(&d_idx32, &mut sv32)),
                    Algo::SortKeysU64 => s.copy(&d_data64, &mut sk64),
                    Algo::SortPairsU64 => s.copy(&d_data64, &mut sk64).and_then(|()| s.copy(&d_idx64, &mut sv64)),
                    _ => Ok(()),
                };
            }
            match algo {
                Algo::SortKeysU32 => a.radix_sort_keys(s, &mut sk32, RadixBits::all::<u32>(), &mut temp),
                Algo::SortPairsU32 => a.radix_sort_pairs(s, &mut sk32, &mut sv32, RadixBits::all::<u32>(), &mut temp),
                Algo::SortKeysU64 => a.radix_sort_keys(s, &mut sk64, RadixBits::all::<u64>(), &mut temp),
                Algo::SortPairsU64 => a.radix_sort_pairs(s, &mut sk64, &mut sv64, RadixBits::all::<u64>(), &mut temp),
                Algo::ReduceU32 => a.reduce(s, &d_data, &mut out, 0, Sum, &mut temp),
                Algo::ReduceF32 => a.reduce(s, &d_floats, &mut sum_f32, 0.0, Sum, &mut temp),
                Algo::ExclusiveU32 => a.exclusive_scan(s, &d_data, &mut out, 0, Sum, &mut temp),
                Algo::InclusiveU32 => a.inclusive_scan(s, &d_data, &mut out, Sum, &mut temp),
                Algo::SelectIf => a.select_if(s, &d_data, LessThan(threshold), &mut out, &mut count, &mut temp),
                Algo::SelectFlagged => a.select_flagged(s, &d_data, &d_flags, &mut out, &mut count, &mut temp),
                Algo::PartitionIf => a.partition_if(s, &d_data, LessThan(threshold), &mut out, &mut count, &mut temp),
                Algo::Unique => a.unique(s, &d_runs, &mut out, &mut count, &mut temp),
                Algo::Rle => a.run_length_encode(s, &d_runs, &mut out, &mut out2, &mut count, &mut temp),
                Algo::HistogramU32 => a.histogram_even(s, &d_hist_in, &mut hist, 257, 0, 1 << 24),
                Algo::SegSum1e3 | Algo::SegSum1e5 | Algo::SegSum1e7 => {
                    a.segmented_reduce(s, &d_floats, &d_off, &mut seg_out, 0.0, Sum, &mut temp)
                }
                Algo::ArgMaxF32 => a.arg_max(s, &d_floats, &mut arg_idx, &mut arg_val, &mut temp),
            }
        };
        let t = match (cub, &mut cub_temp) {
            (Some(c), Some(ct)) => {
                // Radix sort: the values in through `flags`, out through `out2`.
                let (flags_addr, out_addr, out2_addr) = match algo {
                    Algo::SortKeysU32 | Algo::SortPairsU32 => (
                        d_idx32.as_device_ptr().addr(),
                        ck32.as_device_ptr_mut().addr(),
                        cv32.as_device_ptr_mut().addr(),
                    ),
                    Algo::SortKeysU64 | Algo::SortPairsU64 => (
                        d_idx64.as_device_ptr().addr(),
                        ck64.as_device_ptr_mut().addr(),
                        cv64.as_device_ptr_mut().addr(),
                    ),
                    Algo::HistogramU32 => (
                        d_flags.as_device_ptr().addr(),
                        hist_c.as_device_ptr_mut().addr(),
                        out2_c.as_device_ptr_mut().addr(),
                    ),
                    // The offsets in through `flags`, the sums out through `out`.
                    Algo::SegSum1e3 | Algo::SegSum1e5 | Algo::SegSum1e7 => (
                        d_off.as_device_ptr().addr(),
                        seg_out_c.as_device_ptr_mut().addr(),
                        out2_c.as_device_ptr_mut().addr(),
                    ),
                    _ => (
                        d_flags.as_device_ptr().addr(),
                        out_c.as_device_ptr_mut().addr(),
                        out2_c.as_device_ptr_mut().addr(),
                    ),
                };
                let call = CubCall {
                    algo,
                    input: input_addr,
                    flags: flags_addr,
                    out: out_addr,
                    out2: out2_addr,
                    num: count_c.as_device_ptr_mut().addr(),
                    n,
                    temp: ct.as_device_ptr_mut().addr(),
                    temp_bytes: ct.len(),
                };
                let cub_side = |p: Phase| if p == Phase::Prep { Ok(()) } else { call.run(c, s) };
                let t = paired_ms(gpu, 2, reps, &mut rust, cub_side)?;
                (t.a, Some(t))
            }
            _ => (median_ms(gpu, 2, reps, &mut rust)?, None),
        };
        drop(rust);
        if let Some(check) = extra_check(algo, &hist_in, &floats, &offsets) {
            check(
                &Extra { hist: &hist, seg: &seg_out, arg_index: arg_idx.to_vec()?[0], arg_value: arg_val.to_vec()?[0] },
                "Rust",
            )?;
            if cub.is_some() {
                s.synchronize()?;
                let c = Extra {
                    hist: &hist_c,
                    seg: &seg_out_c,
                    arg_index: count_c.to_vec()?[0],
                    arg_value: f32::from_bits(out_c.to_vec()?[0]),
                };
                check(&c, "CUB")?;
            }
            rows.push(Row { name: algo.name().into(), n, bytes, rust: t.0, cub: t.1 });
            continue;
        }
        if algo.is_sort() {
            let mut sides = vec![(&sk32, &sv32, &sk64, &sv64, "Rust")];
            if cub.is_some() {
                s.synchronize()?;
                sides.push((&ck32, &cv32, &ck64, &cv64, "CUB"));
            }
            check_sort(algo, &data, &data64, &sides)?;
            rows.push(Row { name: algo.name().into(), n, bytes, rust: t.0, cub: t.1 });
            continue;
        }
        let input = Inputs { data: &data, floats: &floats, runs: &runs, flags: &flags, threshold };
        let f = sum_f32.to_vec()?[0];
        check(algo, &input, Outputs { out: &out, out2: &out2, count: &count, sum_f32: f }, "Rust")?;
        if cub.is_some() {
            s.synchronize()?;
            let f = f32::from_bits(out_c.to_vec()?[0]);
            check(algo, &input, Outputs { out: &out_c, out2: &out2_c, count: &count_c, sum_f32: f }, "CUB")?;
        }
        rows.push(Row { name: algo.name().into(), n, bytes, rust: t.0, cub: t.1 });
    }
    Ok(())
}

/// One side's sort outputs: u32 keys, u32 values, u64 keys, u64 values, the side's name.
type SortOut<'a> =
    (&'a DeviceBuffer<u32>, &'a DeviceBuffer<u32>, &'a DeviceBuffer<u64>, &'a DeviceBuffer<u64>, &'a str);

/// Each side's radix sort result against a stable CPU sort of the keys with their indices:
/// the (key, index) pairs are distinct, so an unstable sort of them is the stable order of the
/// keys (and sorts 2^28 of them in seconds, where sorting indices by a looked-up key took
/// minutes of cache misses).
fn check_sort(algo: Algo, data: &[u32], data64: &[u64], sides: &[SortOut<'_>]) -> CliResult {
    match algo {
        Algo::SortKeysU32 | Algo::SortPairsU32 => {
            let mut pairs: Vec<(u32, u32)> = data.iter().zip(0u32..).map(|(&k, i)| (k, i)).collect();
            pairs.sort_unstable();
            let (keys, idx): (Vec<u32>, Vec<u32>) = pairs.into_iter().unzip();
            for &(k32, v32, _, _, who) in sides {
                let what = format!("{who} {}", algo.name());
                same(&what, &k32.to_vec()?, &keys)?;
                if algo == Algo::SortPairsU32 {
                    same(&format!("{what} values"), &v32.to_vec()?, &idx)?;
                }
            }
        }
        _ => {
            let mut pairs: Vec<(u64, u64)> = data64.iter().zip(0u64..).map(|(&k, i)| (k, i)).collect();
            pairs.sort_unstable();
            let (keys, idx): (Vec<u64>, Vec<u64>) = pairs.into_iter().unzip();
            for &(_, _, k64, v64, who) in sides {
                let what = format!("{who} {}", algo.name());
                same(&what, &k64.to_vec()?, &keys)?;
                if algo == Algo::SortPairsU64 {
                    same(&format!("{what} values"), &v64.to_vec()?, &idx)?;
                }
            }
        }
    }
    Ok(())
}

/// The inputs both sides saw.
struct Inputs<'a> {
    data: &'a [u32],
    floats: &'a [f32],
    runs: &'a [u32],
    flags: &'a [u8],
    threshold: u32,
}

/// One side's outputs (the f32 sum read back).
struct Outputs<'a> {
    out: &'a DeviceBuffer<u32>,
    out2: &'a DeviceBuffer<u32>,
    count: &'a DeviceBuffer<u64>,
    sum_f32: f32,
}

/// One side's result of `algo` against the CPU, element by element.
fn check(algo: Algo, i: &Inputs<'_>, o: Outputs<'_>, who: &str) -> CliResult {
    let what = format!("{who} {}", algo.name());
    let Inputs { data, floats, runs, flags, threshold } = *i;
    let Outputs { out, out2, count, sum_f32 } = o;
    let count_is = |want: usize| -> CliResult {
        let got = count.to_vec()?[0];
        if got != want as u64 {
            return Err(fail(format!("{what}: count {got}, want {want}")));
        }
        Ok(())
    };
    match algo {
        Algo::ReduceU32 => {
            let want = data.iter().fold(0u32, |a, &x| a.wrapping_add(x));
            same(&what, &out.to_vec()?[..1], &[want])
        }
        Algo::ReduceF32 => {
            let want: f64 = floats.iter().map(|&x| f64::from(x)).sum();
            let got = f64::from(sum_f32);
            if (got - want).abs() > 1e-5 * want.abs().max(1.0) {
                return Err(fail(format!("{what}: {got}, want {want} (within 1e-5 relative)")));
            }
            Ok(())
        }
        Algo::ExclusiveU32 | Algo::InclusiveU32 => {
            let mut acc = 0u32;
            let want: Vec<u32> = data
                .iter()
                .map(|&x| {
                    let e = acc;
                    acc = acc.wrapping_add(x);
                    if algo == Algo::ExclusiveU32 { e } else { acc }
                })
                .collect();
            same(&what, &out.to_vec()?, &want)
        }
        Algo::SelectIf | Algo::PartitionIf => {
            let mut want: Vec<u32> = data.iter().copied().filter(|&x| x < threshold).collect();
            count_is(want.len())?;
            let k = want.len();
            if algo == Algo::PartitionIf {
                want.extend(data.iter().copied().filter(|&x| x >= threshold).rev());
                same(&what, &out.to_vec()?, &want)
            } else {
                same(&what, &out.to_vec()?[..k], &want)
            }
        }
        Algo::SelectFlagged => {
            let want: Vec<u32> = data.iter().zip(flags).filter(|(_, f)| **f != 0).map(|(x, _)| *x).collect();
            count_is(want.len())?;
            same(&what, &out.to_vec()?[..want.len()], &want)
        }
        Algo::Unique | Algo::Rle => {
            let mut heads = Vec::new();
            let mut lens: Vec<u32> = Vec::new();
            for (i, &x) in runs.iter().enumerate() {
                if i == 0 || runs[i - 1] != x {
                    heads.push(x);
                    lens.push(0);
                }
                *lens.last_mut().expect("a run") += 1;
            }
            count_is(heads.len())?;
            same(&what, &out.to_vec()?[..heads.len()], &heads)?;
            if algo == Algo::Rle {
                same(&format!("{what} lengths"), &out2.to_vec()?[..lens.len()], &lens)?;
            }
            Ok(())
        }
        // Checked by `check_sort` and `extra_check`.
        Algo::SortKeysU32
        | Algo::SortPairsU32
        | Algo::SortKeysU64
        | Algo::SortPairsU64
        | Algo::HistogramU32
        | Algo::SegSum1e3
        | Algo::SegSum1e5
        | Algo::SegSum1e7
        | Algo::ArgMaxF32 => Ok(()),
    }
}

/// One side's outputs of the histogram, segmented reduce and argmax (the argmax read back).
struct Extra<'a> {
    hist: &'a DeviceBuffer<u32>,
    seg: &'a DeviceBuffer<f32>,
    arg_index: u64,
    arg_value: f32,
}

/// The check of `algo`'s result against the CPU if it is one of the histogram, segmented reduce
/// and argmax (sums within 1e-5 relative, the rest exactly).
#[allow(clippy::type_complexity)]
fn extra_check<'a>(
    algo: Algo,
    hist_in: &'a [u32],
    floats: &'a [f32],
    offsets: &'a [u64],
) -> Option<Box<dyn Fn(&Extra<'_>, &str) -> CliResult + 'a>> {
    match algo {
        Algo::HistogramU32 => Some(Box::new(move |o: &Extra<'_>, who: &str| {
            let mut want = vec![0u32; 256];
            for &x in hist_in {
                want[(x >> 16) as usize] += 1;
            }
            same(&format!("{who} {}", algo.name()), &o.hist.to_vec()?, &want)
        })),
        Algo::SegSum1e3 | Algo::SegSum1e5 | Algo::SegSum1e7 => Some(Box::new(move |o: &Extra<'_>, who: &str| {
            let got = o.seg.to_vec()?;
            for (k, w) in offsets.windows(2).enumerate() {
                let want: f64 = floats[w[0] as usize..w[1] as usize].iter().map(|&x| f64::from(x)).sum();
                let g = f64::from(got[k]);
                if (g - want).abs() > 1e-5 * want.abs().max(1.0) {
                    return Err(fail(format!(
                        "{who} {}: segment {k} is {g}, want {want} (within 1e-5 relative)",
                        algo.name()
                    )));
                }
            }
            Ok(())
        })),
        Algo::ArgMaxF32 => Some(Box::new(move |o: &Extra<'_>, who: &str| {
            let mut best = 0;
            for (k, &x) in floats.iter().enumerate() {
                if x > floats[best] {
                    best = k;
                }
            }
            if o.arg_index != best as u64 || o.arg_value.to_bits() != floats[best].to_bits() {
                return Err(fail(format!(
                    "{who} {}: ({}, {}), want ({best}, {})",
                    algo.name(),
                    o.arg_index,
                    o.arg_value,
                    floats[best]
                )));
            }
            Ok(())
        })),
        _ => None,
    }
}
