//! `cohort bench algorithms`: the device-wide algorithms of `cohort-algorithms` (reduce, scan,
//! scan by key, select, partition, unique, run-length encode, radix sort, histogram, segmented
//! reduce, argmax) beside CUB's, on the same buffers and stream,
//! timed in interleaved pairs (medians), as GB/s and as a fraction of DRAM bandwidth (an
//! H200's 4.8 TB/s by default). CUB comes from `host/benches/algorithms_cub.cu`, built on the
//! GPU machine as a shared library:
//!
//! ```text
//! nvcc -O3 -arch=sm_90 -std=c++17 -shared -Xcompiler -fPIC -o libalgorithms_cub.so host/benches/algorithms_cub.cu
//! cohort bench algorithms --cub ./libalgorithms_cub.so [--sizes 28] [--only sort,scan]
//! ```
//!
//! Without `--cub` only the Rust side runs. Every result of both sides is checked element by
//! element against the CPU. Inputs (the same for both): `hash(i)` (splitmix64's finalizer)
//! for reduce and scan; select-if keeps `x < 2^31` (half); select-flagged's flags are
//! `hash(i) >> 31`; unique and run-length encode see runs of 4 (`hash(i / 4)`), and the scans
//! by key sum `hash(i)` by those keys; radix sort
//! sorts `hash(i)` (u32 keys) or `hash64(i)` (u64 keys), with the indices `i` as values (the
//! Rust sort is in place: each timed run starts from a copy of the input made untimed; CUB's
//! is `DeviceRadixSort::SortKeys` / `SortPairs` from the input to another buffer); the histogram
//! counts `hash(i) >> 8` (every sample in one of 256 even bins of `[0, 2^24)`); the segmented
//! reduce sums the reduce's floats in segments of 10^3, 10^5 and 10^7 elements (the last one
//! shorter); the merge sorts sort what the radix sorts do, by `a < b`; the segmented sorts sort
//! `hash(i)` in segments of 10^3 and 10^5 (the offsets as the segmented reduce's); argmax looks for the first largest of those floats (each value occurs ~16 times at
//! 2^28). The Rust side also runs on the CPU device (`COHORT_DEVICE=cpu`, small `--sizes`), as a
//! smoke test.
//!
//! **Time.** The host side is linear and parallel (rayon), so that 2^28 elements of every
//! algorithm take well under a minute on a 16-core GPU machine: inputs are generated in parallel
//! and only when an algorithm selected by `--only` needs them; the sort references are one
//! parallel sort of the keys per key type, shared by the keys and pairs rows, and a pairs result
//! is checked in one pass (every value is the index of an input key equal to its key, and equal
//! keys keep ascending indices — with keys equal to the sorted input, that makes the values the
//! stable permutation); the scans, compactions, run lengths, histogram, segment sums and argmax
//! are checked chunk by chunk in parallel from chunk totals; results are read back into reused
//! host buffers. Each row is printed (and flushed) as soon as it is measured and checked, with
//! a progress line per algorithm on stderr (the start, then the seconds of its inputs, timed
//! runs and checks), so a run cut short still leaves its figures; the table is printed again at
//! the end. A failed check marks its row and the run goes on (the command fails at the end).

use std::cell::OnceCell;
use std::ffi::c_void;
use std::fmt::Debug;
use std::io::Write as _;
use std::time::Instant;

use cohort_algorithms::{Algorithms, LessThan, RadixBits, Sum, Temp};
use cohort_runtime::{DeviceBuffer, Gpu, Stream};
use rayon::prelude::*;

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
    /// Only the algorithms whose short name contains one of these (e.g. `sort`, `scan`, `u64`,
    /// `seg_sum_1e7`; an unknown one lists the names)
    #[arg(long, value_delimiter = ',', value_name = "NAMES")]
    pub only: Vec<String>,
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
    InclusiveByKeyU32 = 18,
    ExclusiveByKeyU32 = 19,
    MergeKeysU32 = 20,
    MergePairsU64 = 21,
    SegSortKeys1e3 = 22,
    SegSortKeys1e5 = 23,
}

impl Algo {
    const ALL: [Algo; 24] = [
        Algo::ReduceU32,
        Algo::ReduceF32,
        Algo::ExclusiveU32,
        Algo::InclusiveU32,
        Algo::InclusiveByKeyU32,
        Algo::ExclusiveByKeyU32,
        Algo::SelectIf,
        Algo::SelectFlagged,
        Algo::PartitionIf,
        Algo::Unique,
        Algo::Rle,
        Algo::SortKeysU32,
        Algo::SortPairsU32,
        Algo::SortKeysU64,
        Algo::SortPairsU64,
        Algo::MergeKeysU32,
        Algo::MergePairsU64,
        Algo::SegSortKeys1e3,
        Algo::SegSortKeys1e5,
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
            Algo::InclusiveByKeyU32 => "inclusive sum by key u32, runs of 4 (DeviceScan::InclusiveSumByKey)",
            Algo::ExclusiveByKeyU32 => "exclusive sum by key u32, runs of 4 (DeviceScan::ExclusiveSumByKey)",
            Algo::MergeKeysU32 => "merge sort keys u32, a < b (DeviceMergeSort::SortKeysCopy)",
            Algo::MergePairsU64 => "merge sort pairs u64 → u64, a < b (DeviceMergeSort::SortPairsCopy)",
            Algo::SegSortKeys1e3 => "segmented sort keys u32, segments of 10^3 (DeviceSegmentedSort::StableSortKeys)",
            Algo::SegSortKeys1e5 => "segmented sort keys u32, segments of 10^5 (DeviceSegmentedSort::StableSortKeys)",
        }
    }

    /// The short name `--only` matches.
    fn id(self) -> &'static str {
        match self {
            Algo::ReduceU32 => "reduce_u32",
            Algo::ReduceF32 => "reduce_f32",
            Algo::ExclusiveU32 => "exclusive_scan_u32",
            Algo::InclusiveU32 => "inclusive_scan_u32",
            Algo::SelectIf => "select_if",
            Algo::SelectFlagged => "select_flagged",
            Algo::PartitionIf => "partition_if",
            Algo::Unique => "unique",
            Algo::Rle => "run_length_encode",
            Algo::SortKeysU32 => "sort_keys_u32",
            Algo::SortPairsU32 => "sort_pairs_u32",
            Algo::SortKeysU64 => "sort_keys_u64",
            Algo::SortPairsU64 => "sort_pairs_u64",
            Algo::HistogramU32 => "histogram_even",
            Algo::SegSum1e3 => "seg_sum_1e3",
            Algo::SegSum1e5 => "seg_sum_1e5",
            Algo::SegSum1e7 => "seg_sum_1e7",
            Algo::ArgMaxF32 => "argmax_f32",
            Algo::InclusiveByKeyU32 => "inclusive_scan_by_key_u32",
            Algo::ExclusiveByKeyU32 => "exclusive_scan_by_key_u32",
            Algo::MergeKeysU32 => "merge_sort_keys_u32",
            Algo::MergePairsU64 => "merge_sort_pairs_u64",
            Algo::SegSortKeys1e3 => "seg_sort_keys_1e3",
            Algo::SegSortKeys1e5 => "seg_sort_keys_1e5",
        }
    }

    /// The segment length of a segmented reduce.
    fn segment(self) -> Option<usize> {
        match self {
            Algo::SegSum1e3 | Algo::SegSortKeys1e3 => Some(1_000),
            Algo::SegSum1e5 | Algo::SegSortKeys1e5 => Some(100_000),
            Algo::SegSum1e7 => Some(10_000_000),
            _ => None,
        }
    }
}

/// The algorithms `only` names (every one when empty), in the table's order.
fn selected(only: &[String]) -> CliResult<Vec<Algo>> {
    if only.is_empty() {
        return Ok(Algo::ALL.to_vec());
    }
    for pat in only {
        if !Algo::ALL.iter().any(|a| a.id().contains(pat.as_str())) {
            let names: Vec<&str> = Algo::ALL.iter().map(|a| a.id()).collect();
            return Err(CliError::Usage(format!(
                "--only {pat}: no algorithm's name contains it; the names: {}",
                names.join(", ")
            )));
        }
    }
    Ok(Algo::ALL.into_iter().filter(|a| only.iter().any(|p| a.id().contains(p.as_str()))).collect())
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

    /// The temporary storage (bytes) the largest of `algos` needs for `n` elements.
    fn temp_bytes(&self, algos: &[Algo], n: usize) -> CliResult<usize> {
        let mut most = 1;
        for &a in algos {
            // SAFETY: a size query (no device work).
            let b = unsafe { (self.temp_bytes)(a as i32, n as i64) };
            most = most.max(usize::try_from(b).map_err(|_| fail(format!("CUB {a:?}: no size for {n} elements")))?);
        }
        Ok(most)
    }
}

/// A CUB call's buffers (device addresses; 0 where the algorithm takes none) and its stream.
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
    hash64(i) as u32
}

/// splitmix64's finalizer of `i`, all 64 bits.
fn hash64(i: u64) -> u64 {
    let mut x = i.wrapping_add(0x9E37_79B9_7F4A_7C15);
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^ (x >> 31)
}

/// The reduce's floats: `hash(i)`'s top 24 bits as a fraction of 2^24 (exact in f32).
fn float_of(i: u64) -> f32 {
    (hash(i) >> 8) as f32 / (1 << 24) as f32
}

fn fail(msg: String) -> CliError {
    CliError::Failed(msg)
}

/// Elements per chunk of the parallel checks.
const CHUNK: usize = 1 << 16;

/// `f(i)` for `i` in `0..n`, in parallel.
fn par_gen<T: Send>(n: usize, f: impl Fn(u64) -> T + Sync + Send) -> Vec<T> {
    (0..n as u64).into_par_iter().map(f).collect()
}

/// How many `i` in `0..n` satisfy `f`, in parallel.
fn par_count(n: usize, f: impl Fn(usize) -> bool + Sync + Send) -> usize {
    (0..n).into_par_iter().filter(|&i| f(i)).count()
}

/// The first index where `got` differs from `want`, as an error naming `what` (in parallel).
fn same<T: PartialEq + Debug + Sync>(what: &str, got: &[T], want: &[T]) -> CliResult {
    if got.len() != want.len() {
        return Err(fail(format!("{what}: {} elements, want {}", got.len(), want.len())));
    }
    match got.par_iter().zip(want).position_first(|(a, b)| a != b) {
        Some(i) => Err(fail(format!("{what}: element {i} is {:?}, want {:?}", got[i], want[i]))),
        None => Ok(()),
    }
}

/// Wrapping sum of `x`, in parallel.
fn par_sum(x: &[u32]) -> u32 {
    x.par_iter().fold(|| 0u32, |a, &v| a.wrapping_add(v)).reduce(|| 0, u32::wrapping_add)
}

/// `got` against the wrapping prefix sums of `data` (inclusive or exclusive), chunk by chunk in
/// parallel from the chunks' totals.
fn check_scan(what: &str, data: &[u32], got: &[u32], inclusive: bool) -> CliResult {
    if got.len() != data.len() {
        return Err(fail(format!("{what}: {} elements, want {}", got.len(), data.len())));
    }
    let totals: Vec<u32> = data.par_chunks(CHUNK).map(par_sum_seq).collect();
    let mut starts = Vec::with_capacity(totals.len());
    let mut acc = 0u32;
    for t in totals {
        starts.push(acc);
        acc = acc.wrapping_add(t);
    }
    let bad = data.par_chunks(CHUNK).zip(got.par_chunks(CHUNK)).enumerate().find_map_first(|(k, (d, g))| {
        let mut acc = starts[k];
        for (j, (&x, &y)) in d.iter().zip(g).enumerate() {
            let next = acc.wrapping_add(x);
            let want = if inclusive { next } else { acc };
            if y != want {
                return Some((k * CHUNK + j, y, want));
            }
            acc = next;
        }
        None
    });
    match bad {
        Some((i, y, w)) => Err(fail(format!("{what}: element {i} is {y}, want {w}"))),
        None => Ok(()),
    }
}

/// `got` against the wrapping sums of `data` by `keys` (restarting at every key unlike the one
/// before; exclusive ones start from 0), chunk by chunk in parallel: each chunk's value since
/// its last head (and whether it has one), combined in order into each chunk's incoming value.
fn check_scan_by_key(what: &str, keys: &[u32], data: &[u32], got: &[u32], inclusive: bool) -> CliResult {
    let n = data.len();
    if got.len() != n || keys.len() != n {
        return Err(fail(format!("{what}: {} elements, want {n}", got.len())));
    }
    let head = |i: usize| i == 0 || keys[i - 1] != keys[i];
    let chunks = n.div_ceil(CHUNK);
    let tails: Vec<(bool, u32)> = (0..chunks)
        .into_par_iter()
        .map(|k| {
            let (mut has, mut v) = (false, 0u32);
            let lo = k * CHUNK;
            for (i, &x) in data[lo..(lo + CHUNK).min(n)].iter().enumerate() {
                if head(lo + i) {
                    (has, v) = (true, 0);
                }
                v = v.wrapping_add(x);
            }
            (has, v)
        })
        .collect();
    let mut starts = Vec::with_capacity(chunks);
    let mut acc = 0u32;
    for (has, v) in tails {
        starts.push(acc);
        acc = if has { v } else { acc.wrapping_add(v) };
    }
    let bad = (0..chunks).into_par_iter().find_map_first(|k| {
        let mut acc = starts[k];
        for i in k * CHUNK..((k + 1) * CHUNK).min(n) {
            if head(i) {
                acc = 0;
            }
            let next = acc.wrapping_add(data[i]);
            let want = if inclusive { next } else { acc };
            if got[i] != want {
                return Some((i, got[i], want));
            }
            acc = next;
        }
        None
    });
    match bad {
        Some((i, y, w)) => Err(fail(format!("{what}: element {i} is {y}, want {w}"))),
        None => Ok(()),
    }
}

fn par_sum_seq(c: &[u32]) -> u32 {
    c.iter().fold(0u32, |a, &v| a.wrapping_add(v))
}

/// What a compaction keeps and where: `keep(i)`, and the value it writes for `i`.
struct Compaction<'a> {
    n: usize,
    keep: &'a (dyn Fn(usize) -> bool + Sync),
    value: &'a (dyn Fn(usize) -> u32 + Sync),
    /// A partition: the rejected ones after the kept ones, from the back (`out[n - 1 - r]` is
    /// the `r`-th rejected).
    partition: bool,
}

/// One side's compaction result against `c`: the count, `out[..count]` the kept values in
/// order (`out` the whole output for a partition), and with `lens` each kept element's run
/// length (the distance to the next kept element, or to the end). Chunk by chunk in parallel
/// from the chunks' kept counts.
fn check_compaction(what: &str, c: &Compaction<'_>, count: u64, out: &[u32], lens: Option<&[u32]>) -> CliResult {
    let n = c.n;
    let chunks = n.div_ceil(CHUNK);
    let kept: Vec<usize> = (0..chunks)
        .into_par_iter()
        .map(|k| (k * CHUNK..((k + 1) * CHUNK).min(n)).filter(|&i| (c.keep)(i)).count())
        .collect();
    let total: usize = kept.iter().sum();
    if count != total as u64 {
        return Err(fail(format!("{what}: count {count}, want {total}")));
    }
    let need = if c.partition { n } else { total };
    if out.len() < need || lens.is_some_and(|l| l.len() < total) {
        return Err(fail(format!("{what}: {} outputs read back, want {need}", out.len())));
    }
    let mut starts = Vec::with_capacity(chunks);
    let mut acc = 0;
    for &k in &kept {
        starts.push(acc);
        acc += k;
    }
    let bad = (0..chunks).into_par_iter().find_map_first(|k| {
        let (mut j, lo, hi) = (starts[k], k * CHUNK, ((k + 1) * CHUNK).min(n));
        for i in lo..hi {
            if (c.keep)(i) {
                let want = (c.value)(i);
                if out[j] != want {
                    return Some(format!("output {j} is {}, want {want} (input {i})", out[j]));
                }
                if let Some(lens) = lens {
                    let end = (i + 1..n).find(|&e| (c.keep)(e)).unwrap_or(n);
                    let want = (end - i) as u32;
                    if lens[j] != want {
                        return Some(format!("run {j}'s length is {}, want {want}", lens[j]));
                    }
                }
                j += 1;
            } else if c.partition {
                let at = n - 1 - (i - j);
                let want = (c.value)(i);
                if out[at] != want {
                    return Some(format!("output {at} is {}, want {want} (rejected input {i})", out[at]));
                }
            }
        }
        None
    });
    match bad {
        Some(m) => Err(fail(format!("{what}: {m}"))),
        None => Ok(()),
    }
}

/// A sort's keys and values for [`check_pairs`].
trait SortKey: Copy + Ord + Debug + Send + Sync {}
impl SortKey for u32 {}
impl SortKey for u64 {}

/// One side's sorted pairs: `keys` equal to `sorted` (the input's keys, sorted), and every
/// value the index of an input key equal to its key, ascending among equal keys. With the keys
/// right, that makes the values exactly the stable permutation: the `c` values of a key that
/// occurs `c` times are `c` ascending indices of input elements with that key, so all of them,
/// in input order. One parallel pass (the lookups `data[v]` are the only gathers).
fn check_pairs<K: SortKey, V: Copy + Into<u64> + Sync>(
    what: &str,
    data: &[K],
    sorted: &[K],
    keys: &[K],
    values: &[V],
) -> CliResult {
    same(what, keys, sorted)?;
    if values.len() != keys.len() {
        return Err(fail(format!("{what} values: {} elements, want {}", values.len(), keys.len())));
    }
    let bad = (0..keys.len()).into_par_iter().find_first(|&i| {
        let v: u64 = values[i].into();
        let from_key = usize::try_from(v).ok().and_then(|v| data.get(v)).is_some_and(|k| *k == keys[i]);
        let stable = i == 0 || keys[i - 1] != keys[i] || values[i - 1].into() < v;
        !(from_key && stable)
    });
    match bad {
        Some(i) => Err(fail(format!(
            "{what} values: value {i} is {} (key {:?}): not the stable order's index",
            values[i].into(),
            keys[i]
        ))),
        None => Ok(()),
    }
}

/// One side's segmented sort against the CPU: each segment of `got` the sorted keys of the same
/// segment of `data` (segments in parallel).
fn check_segmented_sort(what: &str, data: &[u32], offsets: &[u64], got: &[u32]) -> CliResult {
    if got.len() != data.len() {
        return Err(fail(format!("{what}: {} elements, want {}", got.len(), data.len())));
    }
    let bad = offsets.par_windows(2).enumerate().find_map_first(|(k, w)| {
        let (b, e) = (w[0] as usize, w[1] as usize);
        let mut want = data[b..e].to_vec();
        want.sort_unstable();
        want.iter().zip(&got[b..e]).position(|(x, y)| x != y).map(|i| (k, b + i, got[b + i], want[i]))
    });
    match bad {
        Some((k, i, g, w)) => Err(fail(format!("{what}: element {i} (segment {k}) is {g}, want {w}"))),
        None => Ok(()),
    }
}

/// One input array, on the host (for the checks) and on the device.
struct Input<T: cohort::DeviceCopy> {
    host: Vec<T>,
    dev: DeviceBuffer<T>,
}

/// The inputs of one size, generated (in parallel) and uploaded when first needed.
struct Inputs<'g> {
    gpu: &'g Gpu,
    n: usize,
    data: OnceCell<Input<u32>>,
    floats: OnceCell<Input<f32>>,
    runs: OnceCell<Input<u32>>,
    flags: OnceCell<Input<u8>>,
    data64: OnceCell<Input<u64>>,
    hist_in: OnceCell<Input<u32>>,
    idx32: OnceCell<DeviceBuffer<u32>>,
    idx64: OnceCell<DeviceBuffer<u64>>,
    /// The sort references: the keys sorted (one parallel sort per key type).
    sorted32: OnceCell<Vec<u32>>,
    sorted64: OnceCell<Vec<u64>>,
}

/// `cell`'s value, made by `f` the first time.
fn lazy<T>(cell: &OnceCell<T>, f: impl FnOnce() -> CliResult<T>) -> CliResult<&T> {
    if let Some(v) = cell.get() {
        return Ok(v);
    }
    let v = f()?;
    Ok(cell.get_or_init(|| v))
}

impl<'g> Inputs<'g> {
    fn new(gpu: &'g Gpu, n: usize) -> Self {
        Self {
            gpu,
            n,
            data: OnceCell::new(),
            floats: OnceCell::new(),
            runs: OnceCell::new(),
            flags: OnceCell::new(),
            data64: OnceCell::new(),
            hist_in: OnceCell::new(),
            idx32: OnceCell::new(),
            idx64: OnceCell::new(),
            sorted32: OnceCell::new(),
            sorted64: OnceCell::new(),
        }
    }

    fn make<T: cohort::DeviceCopy + Send>(&self, f: impl Fn(u64) -> T + Sync + Send) -> CliResult<Input<T>> {
        let host = par_gen(self.n, f);
        let dev = self.gpu.upload(&host)?;
        Ok(Input { host, dev })
    }

    /// `hash(i)`.
    fn data(&self) -> CliResult<&Input<u32>> {
        lazy(&self.data, || self.make(hash))
    }
    /// [`float_of`]`(i)`.
    fn floats(&self) -> CliResult<&Input<f32>> {
        lazy(&self.floats, || self.make(float_of))
    }
    /// `hash(i / 4)`: runs of 4.
    fn runs(&self) -> CliResult<&Input<u32>> {
        lazy(&self.runs, || self.make(|i| hash(i / 4)))
    }
    /// `hash(i) >> 31`.
    fn flags(&self) -> CliResult<&Input<u8>> {
        lazy(&self.flags, || self.make(|i| (hash(i) >> 31) as u8))
    }
    /// `hash64(i)`.
    fn data64(&self) -> CliResult<&Input<u64>> {
        lazy(&self.data64, || self.make(hash64))
    }
    /// `hash(i) >> 8`: every sample in one of the 256 bins of `[0, 2^24)`.
    fn hist_in(&self) -> CliResult<&Input<u32>> {
        lazy(&self.hist_in, || self.make(|i| hash(i) >> 8))
    }
    /// The indices `i` (a sort's values), on the device only.
    fn idx32(&self) -> CliResult<&DeviceBuffer<u32>> {
        lazy(&self.idx32, || Ok(self.gpu.upload(&par_gen(self.n, |i| i as u32))?))
    }
    fn idx64(&self) -> CliResult<&DeviceBuffer<u64>> {
        lazy(&self.idx64, || Ok(self.gpu.upload(&par_gen(self.n, |i| i))?))
    }
    fn sorted32(&self) -> CliResult<&[u32]> {
        let data = self.data()?;
        lazy(&self.sorted32, || {
            let mut v = data.host.clone();
            v.par_sort_unstable();
            Ok(v)
        })
        .map(Vec::as_slice)
    }
    fn sorted64(&self) -> CliResult<&[u64]> {
        let data = self.data64()?;
        lazy(&self.sorted64, || {
            let mut v = data.host.clone();
            v.par_sort_unstable();
            Ok(v)
        })
        .map(Vec::as_slice)
    }
}

/// Host buffers results are read back into, reused across algorithms (allocating and faulting
/// in a fresh GiB per read-back costs more than the copy).
#[derive(Default)]
struct Scratch {
    a32: Vec<u32>,
    b32: Vec<u32>,
    a64: Vec<u64>,
    b64: Vec<u64>,
}

/// The first `len` elements of `buf`, read into `host` (grown as needed).
fn read<'h, T: cohort::DeviceCopy + Default + Send + Sync>(
    buf: &DeviceBuffer<T>,
    len: usize,
    host: &'h mut Vec<T>,
) -> CliResult<&'h [T]> {
    if host.len() < len {
        host.clear();
        host.par_extend(rayon::iter::repeat_n(T::default(), len));
    }
    buf.slice(..len).copy_to(&mut host[..len])?;
    Ok(&host[..len])
}

/// One side's (Rust's or CUB's) outputs of one algorithm: only those it writes are allocated.
struct Outs {
    /// Scans, compactions, run heads, sorted u32 keys, the histogram.
    a32: Option<DeviceBuffer<u32>>,
    /// Run lengths, sorted u32 values.
    b32: Option<DeviceBuffer<u32>>,
    /// Sorted u64 keys.
    a64: Option<DeviceBuffer<u64>>,
    /// Sorted u64 values.
    b64: Option<DeviceBuffer<u64>>,
    /// The f32 sum or argmax value (one), the segment sums.
    f: Option<DeviceBuffer<f32>>,
    /// The number selected, the argmax's index.
    count: DeviceBuffer<u64>,
}

fn addr<T: cohort::DeviceCopy>(b: &mut Option<DeviceBuffer<T>>) -> u64 {
    b.as_mut().map_or(0, |b| b.as_device_ptr_mut().addr())
}

fn got<T: cohort::DeviceCopy>(b: &Option<DeviceBuffer<T>>) -> &DeviceBuffer<T> {
    b.as_ref().expect("allocated for this algorithm by Outs::new")
}

fn need<T: cohort::DeviceCopy>(b: &mut Option<DeviceBuffer<T>>) -> &mut DeviceBuffer<T> {
    b.as_mut().expect("allocated for this algorithm by Outs::new")
}

impl Outs {
    fn new(gpu: &Gpu, algo: Algo, n: usize, segments: usize) -> CliResult<Self> {
        let z32 = |len: usize| gpu.zeroed::<u32>(len).map(Some);
        let z64 = |len: usize| gpu.zeroed::<u64>(len).map(Some);
        let mut o = Outs { a32: None, b32: None, a64: None, b64: None, f: None, count: gpu.zeroed::<u64>(1)? };
        match algo {
            Algo::ReduceU32 => o.a32 = z32(1)?,
            Algo::ReduceF32 | Algo::ArgMaxF32 => o.f = Some(gpu.zeroed::<f32>(1)?),
            Algo::ExclusiveU32
            | Algo::InclusiveU32
            | Algo::SelectIf
            | Algo::SelectFlagged
            | Algo::PartitionIf
            | Algo::Unique
            | Algo::InclusiveByKeyU32
            | Algo::ExclusiveByKeyU32
            | Algo::MergeKeysU32
            | Algo::SegSortKeys1e3
            | Algo::SegSortKeys1e5
            | Algo::SortKeysU32 => o.a32 = z32(n)?,
            Algo::Rle | Algo::SortPairsU32 => (o.a32, o.b32) = (z32(n)?, z32(n)?),
            Algo::SortKeysU64 => o.a64 = z64(n)?,
            Algo::SortPairsU64 | Algo::MergePairsU64 => (o.a64, o.b64) = (z64(n)?, z64(n)?),
            Algo::HistogramU32 => o.a32 = z32(256)?,
            Algo::SegSum1e3 | Algo::SegSum1e5 | Algo::SegSum1e7 => o.f = Some(gpu.zeroed::<f32>(segments.max(1))?),
        }
        Ok(o)
    }
}

/// One measured row.
struct Row {
    name: String,
    n: usize,
    bytes: f64,
    rust: f64,
    cub: Option<Paired>,
    /// The first failed check, if any.
    failed: Option<String>,
}

const HEAD: [&str; 7] =
    ["algorithm", "n", "Rust", "CUB", "CUB / Rust (speed) [quartiles]", "Rust of DRAM", "CUB of DRAM"];

impl Row {
    fn cells(&self, dram_tbs: f64) -> Vec<String> {
        let gbs = |ms: f64| self.bytes / ms / 1e6;
        let (cub_t, ratio, cub_frac) = match &self.cub {
            Some(p) => (
                format!("{:.3} ms ({:.0} GB/s)", p.b, gbs(p.b)),
                p.ratio_text(),
                format!("{:.2}", gbs(p.b) / (dram_tbs * 1e3)),
            ),
            None => ("—".into(), "—".into(), "—".into()),
        };
        let name = match &self.failed {
            Some(_) => format!("{} — CHECK FAILED", self.name),
            None => self.name.clone(),
        };
        vec![
            name,
            format!("2^{}", self.n.trailing_zeros()),
            format!("{:.3} ms ({:.0} GB/s)", self.rust, gbs(self.rust)),
            cub_t,
            ratio,
            format!("{:.2}", gbs(self.rust) / (dram_tbs * 1e3)),
            cub_frac,
        ]
    }
}

/// Prints `line` to stdout at once (a run cut short keeps it).
fn emit(line: &str) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{line}");
    let _ = out.flush();
}

pub fn run(args: Args) -> CliResult {
    let gpu = Gpu::from_env()?;
    bench(&gpu, args)
}

fn bench(gpu: &Gpu, args: Args) -> CliResult {
    let Args { sizes, reps, dram_tbs, cub, only } = args;
    let algos_run = selected(&only)?;
    if gpu.is_cpu() && cub.is_some() {
        return Err(CliError::Usage("--cub needs a GPU (the CPU device runs the Rust side only)".into()));
    }
    if sizes.iter().any(|&s| s > 31) {
        return Err(CliError::Usage("--sizes: powers of two up to 31 (CUB's side takes `int` sizes)".into()));
    }
    let start = Instant::now();
    emit(&gpu.info().to_string());
    let cub = cub.as_deref().map(Cub::load).transpose()?;
    let algos = Algorithms::load(gpu)?;
    eprintln!(
        "[{:.1} s] loaded the algorithms' kernels{}",
        start.elapsed().as_secs_f64(),
        if cub.is_some() { " and CUB" } else { "" }
    );
    emit(&format!(
        "cohort-algorithms{}; {reps} timed runs of each (medians{}); DRAM {dram_tbs} TB/s\n",
        if cub.is_some() { " beside CUB (same buffers, same stream)" } else { " alone (no --cub)" },
        if cub.is_some() {
            ", Rust and CUB interleaved in pairs; the ratio is the median of the pairs' ratios"
        } else {
            ""
        },
    ));
    emit(&format!("| {} |", HEAD.join(" | ")));
    emit(&format!("|{}", "---|".repeat(HEAD.len())));
    let mut rows = Vec::new();
    let total = sizes.len() * algos_run.len();
    for &log in &sizes {
        let n = 1usize << log;
        let mut ctx = Ctx {
            gpu,
            algos: &algos,
            cub: cub.as_ref(),
            cub_temp: None,
            temp: Temp::new(gpu),
            inputs: Inputs::new(gpu, n),
            scratch: Scratch::default(),
            n,
            reps,
        };
        if let Some(c) = &cub {
            ctx.cub_temp = Some(gpu.zeroed::<u8>(c.temp_bytes(&algos_run, n)?)?);
        }
        for &algo in &algos_run {
            eprintln!("[{}/{total}] [{:.1} s] 2^{log} {} …", rows.len() + 1, start.elapsed().as_secs_f64(), algo.id());
            let (row, phases) = ctx.one(algo)?;
            emit(&format!("| {} |", row.cells(dram_tbs).join(" | ")));
            eprintln!(
                "    inputs and references {:.2} s · timed runs {:.2} s · checks {:.2} s{}",
                phases[0],
                phases[1],
                phases[2],
                row.failed.as_deref().map(|f| format!(" · CHECK FAILED: {f}")).unwrap_or_default()
            );
            rows.push(row);
        }
    }
    eprintln!("[{:.1} s] done", start.elapsed().as_secs_f64());
    println!();
    let mut table = Table::new(&HEAD).numeric(1..HEAD.len());
    for r in &rows {
        table.row(r.cells(dram_tbs));
    }
    table.print();
    println!(
        "\nbytes: what the algorithm must read and write (reduce 4n; scans 8n; scans by key 12n; select/unique 4n + 4 per selected, \
         flagged + n, partition 8n; run-length encode 4n + 8 per run; radix sort one read and one write of the \
         keys and values: 8n u32 keys, 16n u32 pairs and u64 keys, 32n u64 pairs (merge sorts alike; segmented sorts 8n and the offsets); histogram and argmax 4n; segmented \
         sum 4n + 12 per segment: its offset and sum); every result of both sides checked element by element against \
         the CPU (f32 sums within 1e-5 relative)"
    );
    let failed: Vec<String> = rows
        .iter()
        .filter_map(|r| r.failed.as_ref().map(|f| format!("2^{} {}: {f}", r.n.trailing_zeros(), r.name)))
        .collect();
    if !failed.is_empty() {
        return Err(fail(format!("{} checks failed:\n{}", failed.len(), failed.join("\n"))));
    }
    Ok(())
}

/// One size's state: the inputs, the storage, the read-back buffers.
struct Ctx<'g> {
    gpu: &'g Gpu,
    algos: &'g Algorithms,
    cub: Option<&'g Cub>,
    cub_temp: Option<DeviceBuffer<u8>>,
    temp: Temp,
    inputs: Inputs<'g>,
    scratch: Scratch,
    n: usize,
    reps: usize,
}

impl Ctx<'_> {
    /// Measures and checks `algo`: its row, and the seconds of its inputs (and references),
    /// its timed runs and its checks.
    #[allow(clippy::too_many_lines)]
    fn one(&mut self, algo: Algo) -> CliResult<(Row, [f64; 3])> {
        let t0 = Instant::now();
        let (gpu, a, n, inp) = (self.gpu, self.algos, self.n, &self.inputs);
        let s = gpu.stream();
        let nf = n as f64;
        let threshold = 1u32 << 31;
        // The inputs this algorithm reads (generated and uploaded now if not yet), its bytes.
        let offsets: Vec<u64> = match algo.segment() {
            Some(len) => (0..=n.div_ceil(len)).map(|i| (i * len).min(n) as u64).collect(),
            None => vec![0],
        };
        let segments = offsets.len() - 1;
        let d_off = gpu.upload(&offsets)?;
        let (input_addr, flags_addr, bytes) = match algo {
            Algo::ReduceU32 => (inp.data()?.dev.as_device_ptr().addr(), 0, 4.0 * nf),
            Algo::ExclusiveU32 | Algo::InclusiveU32 | Algo::PartitionIf => {
                (inp.data()?.dev.as_device_ptr().addr(), 0, 8.0 * nf)
            }
            Algo::SelectIf => {
                let d = inp.data()?;
                let selected = par_count(n, |i| d.host[i] < threshold);
                (d.dev.as_device_ptr().addr(), 0, 4.0 * nf + 4.0 * selected as f64)
            }
            Algo::SelectFlagged => {
                let f = inp.flags()?;
                let flagged = par_count(n, |i| f.host[i] != 0);
                (inp.data()?.dev.as_device_ptr().addr(), f.dev.as_device_ptr().addr(), 5.0 * nf + 4.0 * flagged as f64)
            }
            Algo::Unique | Algo::Rle => {
                let r = inp.runs()?;
                let heads = par_count(n, |i| i == 0 || r.host[i - 1] != r.host[i]) as f64;
                let per_run = if algo == Algo::Rle { 8.0 } else { 4.0 };
                (r.dev.as_device_ptr().addr(), 0, 4.0 * nf + per_run * heads)
            }
            Algo::SortKeysU32 | Algo::MergeKeysU32 => {
                inp.sorted32()?;
                (inp.data()?.dev.as_device_ptr().addr(), 0, 8.0 * nf)
            }
            // The keys read and written, the offsets.
            Algo::SegSortKeys1e3 | Algo::SegSortKeys1e5 => (
                inp.data()?.dev.as_device_ptr().addr(),
                d_off.as_device_ptr().addr(),
                8.0 * nf + 8.0 * offsets.len() as f64,
            ),
            Algo::SortPairsU32 => {
                inp.sorted32()?;
                (inp.data()?.dev.as_device_ptr().addr(), inp.idx32()?.as_device_ptr().addr(), 16.0 * nf)
            }
            Algo::SortKeysU64 => {
                inp.sorted64()?;
                (inp.data64()?.dev.as_device_ptr().addr(), 0, 16.0 * nf)
            }
            Algo::SortPairsU64 | Algo::MergePairsU64 => {
                inp.sorted64()?;
                (inp.data64()?.dev.as_device_ptr().addr(), inp.idx64()?.as_device_ptr().addr(), 32.0 * nf)
            }
            Algo::HistogramU32 => (inp.hist_in()?.dev.as_device_ptr().addr(), 0, 4.0 * nf),
            // The keys and values read, the values written.
            Algo::InclusiveByKeyU32 | Algo::ExclusiveByKeyU32 => {
                (inp.data()?.dev.as_device_ptr().addr(), inp.runs()?.dev.as_device_ptr().addr(), 12.0 * nf)
            }
            Algo::ReduceF32 | Algo::ArgMaxF32 => (inp.floats()?.dev.as_device_ptr().addr(), 0, 4.0 * nf),
            // The elements, the offsets, the sums.
            Algo::SegSum1e3 | Algo::SegSum1e5 | Algo::SegSum1e7 => (
                inp.floats()?.dev.as_device_ptr().addr(),
                d_off.as_device_ptr().addr(),
                4.0 * nf + 12.0 * segments as f64 + 8.0,
            ),
        };
        let mut r = Outs::new(gpu, algo, n, segments)?;
        let mut c = match self.cub {
            Some(_) => Some(Outs::new(gpu, algo, n, segments)?),
            None => None,
        };
        let t1 = Instant::now();

        // The Rust side.
        let temp = &mut self.temp;
        let mut rust = |p: Phase| -> cohort_runtime::Result<()> {
            let (data, data64) = (inp.data.get(), inp.data64.get());
            let (idx32, idx64) = (inp.idx32.get(), inp.idx64.get());
            let src32 = || &data.expect("generated above").dev;
            let src64 = || &data64.expect("generated above").dev;
            if p == Phase::Prep {
                // The sort is in place: each run starts from the input (untimed).
                return match algo {
                    Algo::SortKeysU32 | Algo::MergeKeysU32 => s.copy(src32(), need(&mut r.a32)),
                    Algo::SortPairsU32 => s
                        .copy(src32(), need(&mut r.a32))
                        .and_then(|()| s.copy(idx32.expect("generated above"), need(&mut r.b32))),
                    Algo::SortKeysU64 => s.copy(src64(), need(&mut r.a64)),
                    Algo::SortPairsU64 | Algo::MergePairsU64 => s
                        .copy(src64(), need(&mut r.a64))
                        .and_then(|()| s.copy(idx64.expect("generated above"), need(&mut r.b64))),
                    _ => Ok(()),
                };
            }
            let floats = || &inp.floats.get().expect("generated above").dev;
            let runs = || &inp.runs.get().expect("generated above").dev;
            match algo {
                Algo::SortKeysU32 => a.radix_sort_keys(s, need(&mut r.a32), RadixBits::all::<u32>(), temp),
                Algo::SortPairsU32 => {
                    a.radix_sort_pairs(s, need(&mut r.a32), need(&mut r.b32), RadixBits::all::<u32>(), temp)
                }
                Algo::SortKeysU64 => a.radix_sort_keys(s, need(&mut r.a64), RadixBits::all::<u64>(), temp),
                Algo::MergeKeysU32 => a.merge_sort_keys(s, need(&mut r.a32), temp),
                Algo::MergePairsU64 => a.merge_sort_pairs(s, need(&mut r.a64), need(&mut r.b64), temp),
                Algo::SegSortKeys1e3 | Algo::SegSortKeys1e5 => {
                    a.segmented_sort_keys(s, src32(), need(&mut r.a32), &d_off, RadixBits::all::<u32>(), temp)
                }
                Algo::SortPairsU64 => {
                    a.radix_sort_pairs(s, need(&mut r.a64), need(&mut r.b64), RadixBits::all::<u64>(), temp)
                }
                Algo::ReduceU32 => a.reduce(s, src32(), need(&mut r.a32), 0, Sum, temp),
                Algo::ReduceF32 => a.reduce(s, floats(), need(&mut r.f), 0.0, Sum, temp),
                Algo::ExclusiveU32 => a.exclusive_scan(s, src32(), need(&mut r.a32), 0, Sum, temp),
                Algo::InclusiveU32 => a.inclusive_scan(s, src32(), need(&mut r.a32), Sum, temp),
                Algo::InclusiveByKeyU32 => a.inclusive_scan_by_key(s, runs(), src32(), need(&mut r.a32), Sum, temp),
                Algo::ExclusiveByKeyU32 => a.exclusive_scan_by_key(s, runs(), src32(), need(&mut r.a32), 0, Sum, temp),
                Algo::SelectIf => a.select_if(s, src32(), LessThan(threshold), need(&mut r.a32), &mut r.count, temp),
                Algo::SelectFlagged => {
                    let flags = &inp.flags.get().expect("generated above").dev;
                    a.select_flagged(s, src32(), flags, need(&mut r.a32), &mut r.count, temp)
                }
                Algo::PartitionIf => {
                    a.partition_if(s, src32(), LessThan(threshold), need(&mut r.a32), &mut r.count, temp)
                }
                Algo::Unique => a.unique(s, runs(), need(&mut r.a32), &mut r.count, temp),
                Algo::Rle => a.run_length_encode(s, runs(), need(&mut r.a32), need(&mut r.b32), &mut r.count, temp),
                Algo::HistogramU32 => a.histogram_even(
                    s,
                    &inp.hist_in.get().expect("generated above").dev,
                    need(&mut r.a32),
                    257,
                    0,
                    1 << 24,
                ),
                Algo::SegSum1e3 | Algo::SegSum1e5 | Algo::SegSum1e7 => {
                    a.segmented_reduce(s, floats(), &d_off, need(&mut r.f), 0.0, Sum, temp)
                }
                Algo::ArgMaxF32 => a.arg_max(s, floats(), &mut r.count, need(&mut r.f), temp),
            }
        };
        let t = match (self.cub, &mut self.cub_temp, &mut c) {
            (Some(cub), Some(ct), Some(c)) => {
                // Keys out through `out` (values through `out2`); an f32 result (sum, argmax
                // value, segment sums) through `out`; counts and the argmax index through `num`.
                let out = match algo {
                    Algo::SortKeysU64 | Algo::SortPairsU64 | Algo::MergePairsU64 => addr(&mut c.a64),
                    Algo::ReduceF32 | Algo::ArgMaxF32 | Algo::SegSum1e3 | Algo::SegSum1e5 | Algo::SegSum1e7 => {
                        addr(&mut c.f)
                    }
                    _ => addr(&mut c.a32),
                };
                let out2 = match algo {
                    Algo::SortPairsU64 | Algo::MergePairsU64 => addr(&mut c.b64),
                    _ => addr(&mut c.b32),
                };
                let call = CubCall {
                    algo,
                    input: input_addr,
                    flags: flags_addr,
                    out,
                    out2,
                    num: c.count.as_device_ptr_mut().addr(),
                    n,
                    temp: ct.as_device_ptr_mut().addr(),
                    temp_bytes: ct.len(),
                };
                let cub_side = |p: Phase| if p == Phase::Prep { Ok(()) } else { call.run(cub, s) };
                let t = paired_ms(gpu, 2, self.reps, &mut rust, cub_side)?;
                (t.a, Some(t))
            }
            _ => (median_ms(gpu, 2, self.reps, &mut rust)?, None),
        };
        drop(rust);
        s.synchronize()?;
        let t2 = Instant::now();

        let mut failed = self.check(algo, &offsets, &r, "Rust").err();
        if let Some(c) = &c
            && failed.is_none()
        {
            failed = self.check(algo, &offsets, c, "CUB").err();
        }
        let failed = match failed {
            None => None,
            Some(CliError::Failed(m)) => Some(m),
            Some(e) => return Err(e),
        };
        let t3 = Instant::now();
        let row = Row { name: algo.name().into(), n, bytes, rust: t.0, cub: t.1, failed };
        let secs = |a: Instant, b: Instant| (b - a).as_secs_f64();
        Ok((row, [secs(t0, t1), secs(t1, t2), secs(t2, t3)]))
    }

    /// One side's result of `algo` against the CPU, element by element (f32 sums within 1e-5
    /// relative).
    fn check(&mut self, algo: Algo, offsets: &[u64], o: &Outs, who: &str) -> CliResult {
        let what = format!("{who} {}", algo.name());
        let (inp, n, sc) = (&self.inputs, self.n, &mut self.scratch);
        let count = o.count.to_vec()?[0];
        let threshold = 1u32 << 31;
        let close = |g: f32, want: f64| (f64::from(g) - want).abs() <= 1e-5 * want.abs().max(1.0);
        match algo {
            Algo::ReduceU32 => {
                let want = par_sum(&inp.data()?.host);
                same(&what, &got(&o.a32).to_vec()?, &[want])
            }
            Algo::ReduceF32 => {
                let want: f64 = inp.floats()?.host.par_iter().map(|&x| f64::from(x)).sum();
                let g = got(&o.f).to_vec()?[0];
                if !close(g, want) {
                    return Err(fail(format!("{what}: {g}, want {want} (within 1e-5 relative)")));
                }
                Ok(())
            }
            Algo::ExclusiveU32 | Algo::InclusiveU32 => {
                let out = read(got(&o.a32), n, &mut sc.a32)?;
                check_scan(&what, &inp.data()?.host, out, algo == Algo::InclusiveU32)
            }
            Algo::InclusiveByKeyU32 | Algo::ExclusiveByKeyU32 => {
                let out = read(got(&o.a32), n, &mut sc.a32)?;
                check_scan_by_key(&what, &inp.runs()?.host, &inp.data()?.host, out, algo == Algo::InclusiveByKeyU32)
            }
            Algo::SelectIf | Algo::PartitionIf | Algo::SelectFlagged => {
                let d = &inp.data()?.host;
                let flags = if algo == Algo::SelectFlagged { Some(&inp.flags()?.host) } else { None };
                let keep = |i: usize| match flags {
                    Some(f) => f[i] != 0,
                    None => d[i] < threshold,
                };
                let value = |i: usize| d[i];
                let partition = algo == Algo::PartitionIf;
                // A selection's output past its count is not written: read only what counts.
                let len = if partition { n } else { usize::try_from(count).unwrap_or(usize::MAX).min(n) };
                let out = read(got(&o.a32), len, &mut sc.a32)?;
                check_compaction(&what, &Compaction { n, keep: &keep, value: &value, partition }, count, out, None)
            }
            Algo::Unique | Algo::Rle => {
                let runs = &inp.runs()?.host;
                let keep = |i: usize| i == 0 || runs[i - 1] != runs[i];
                let value = |i: usize| runs[i];
                let len = usize::try_from(count).unwrap_or(usize::MAX).min(n);
                let out = read(got(&o.a32), len, &mut sc.a32)?;
                let lens = if algo == Algo::Rle { Some(read(got(&o.b32), len, &mut sc.b32)?) } else { None };
                check_compaction(
                    &what,
                    &Compaction { n, keep: &keep, value: &value, partition: false },
                    count,
                    out,
                    lens,
                )
            }
            Algo::SegSortKeys1e3 | Algo::SegSortKeys1e5 => {
                let keys = read(got(&o.a32), n, &mut sc.a32)?;
                check_segmented_sort(&what, &inp.data()?.host, offsets, keys)
            }
            Algo::SortKeysU32 | Algo::SortPairsU32 | Algo::MergeKeysU32 => {
                let keys = read(got(&o.a32), n, &mut sc.a32)?;
                if algo != Algo::SortPairsU32 {
                    return same(&what, keys, inp.sorted32()?);
                }
                let values = read(got(&o.b32), n, &mut sc.b32)?;
                check_pairs(&what, &inp.data()?.host, inp.sorted32()?, keys, values)
            }
            Algo::SortKeysU64 | Algo::SortPairsU64 | Algo::MergePairsU64 => {
                let keys = read(got(&o.a64), n, &mut sc.a64)?;
                if algo == Algo::SortKeysU64 {
                    return same(&what, keys, inp.sorted64()?);
                }
                let values = read(got(&o.b64), n, &mut sc.b64)?;
                check_pairs(&what, &inp.data64()?.host, inp.sorted64()?, keys, values)
            }
            Algo::HistogramU32 => {
                let want = inp
                    .hist_in()?
                    .host
                    .par_chunks(CHUNK)
                    .map(|c| {
                        let mut h = vec![0u32; 256];
                        for &x in c {
                            h[(x >> 16) as usize] += 1;
                        }
                        h
                    })
                    .reduce(
                        || vec![0u32; 256],
                        |mut a, b| {
                            a.iter_mut().zip(b).for_each(|(x, y)| *x += y);
                            a
                        },
                    );
                same(&what, &got(&o.a32).to_vec()?, &want)
            }
            Algo::SegSum1e3 | Algo::SegSum1e5 | Algo::SegSum1e7 => {
                let floats = &inp.floats()?.host;
                let sums = got(&o.f).to_vec()?;
                let bad = offsets.par_windows(2).enumerate().find_map_first(|(k, w)| {
                    let want: f64 = floats[w[0] as usize..w[1] as usize].iter().map(|&x| f64::from(x)).sum();
                    (!close(sums[k], want)).then_some((k, sums[k], want))
                });
                match bad {
                    Some((k, g, w)) => {
                        Err(fail(format!("{what}: segment {k} is {g}, want {w} (within 1e-5 relative)")))
                    }
                    None => Ok(()),
                }
            }
            Algo::ArgMaxF32 => {
                let floats = &inp.floats()?.host;
                // The first largest (no NaN among the inputs).
                let best = |x: (usize, f32), y: (usize, f32)| {
                    if y.1 > x.1 || (y.1 == x.1 && y.0 < x.0) { y } else { x }
                };
                let (bi, bv) = floats.par_iter().copied().enumerate().reduce(|| (usize::MAX, f32::NEG_INFINITY), best);
                let value = got(&o.f).to_vec()?[0];
                if count != bi as u64 || value.to_bits() != bv.to_bits() {
                    return Err(fail(format!("{what}: ({count}, {value}), want ({bi}, {bv})")));
                }
                Ok(())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The bench runs on the CPU device (every algorithm, two sizes, its checks passing), and
    /// `--only` picks by name.
    #[test]
    fn bench_runs_and_checks_on_the_cpu_device() {
        let gpu = Gpu::cpu().expect("the CPU device");
        let args = Args { sizes: vec![10, 13], reps: 1, dram_tbs: 4.8, cub: None, only: vec![] };
        bench(&gpu, args).expect("every check passes");
        // By substring: the merge sort's pairs row too.
        assert_eq!(
            selected(&["sort_pairs".into()]).unwrap(),
            [Algo::SortPairsU32, Algo::SortPairsU64, Algo::MergePairsU64]
        );
        assert_eq!(selected(&["seg_sum".into(), "argmax".into()]).unwrap().len(), 4);
        assert_eq!(selected(&["seg".into()]).unwrap().len(), 5);
        assert!(matches!(selected(&["nope".into()]), Err(CliError::Usage(_))));
    }

    /// The checks catch what they must: a swapped pair of equal keys' values (unstable), a
    /// value pointing at another key, a wrong scan element, a compaction's wrong count, element
    /// and run length, a partition's rejected element.
    #[test]
    fn the_checks_catch_wrong_results() {
        let data = [5u32, 3, 5, 1, 3, 5];
        let mut sorted = data.to_vec();
        sorted.sort_unstable();
        let (keys, good) = (sorted.clone(), [3u32, 1, 4, 0, 2, 5]);
        check_pairs("ok", &data, &sorted, &keys, &good).unwrap();
        check_pairs("unstable", &data, &sorted, &keys, &[3u32, 4, 1, 0, 2, 5]).unwrap_err();
        check_pairs("other key", &data, &sorted, &keys, &[3u32, 1, 4, 0, 2, 1]).unwrap_err();
        check_pairs("past the end", &data, &sorted, &keys, &[3u32, 1, 4, 0, 2, 9]).unwrap_err();
        check_pairs("keys", &data, &sorted, &[1, 3, 3, 5, 5, 3], &good).unwrap_err();

        let n = 3 * CHUNK + 17;
        let data: Vec<u32> = par_gen(n, hash);
        let mut acc = 0u32;
        let mut incl: Vec<u32> = data
            .iter()
            .map(|&x| {
                acc = acc.wrapping_add(x);
                acc
            })
            .collect();
        check_scan("ok", &data, &incl, true).unwrap();
        incl[2 * CHUNK + 5] ^= 1;
        check_scan("bad", &data, &incl, true).unwrap_err();

        let runs: Vec<u32> = (0..n as u64).map(|i| hash(i / 3)).collect();
        let keep = |i: usize| i == 0 || runs[i - 1] != runs[i];
        let value = |i: usize| runs[i];
        let c = Compaction { n, keep: &keep, value: &value, partition: false };
        let heads: Vec<u32> = (0..n).filter(|&i| keep(i)).map(value).collect();
        let mut lens: Vec<u32> = vec![3; heads.len()];
        *lens.last_mut().unwrap() = (n - 3 * (heads.len() - 1)) as u32;
        let k = heads.len() as u64;
        check_compaction("ok", &c, k, &heads, Some(&lens)).unwrap();
        check_compaction("count", &c, k - 1, &heads, Some(&lens)).unwrap_err();
        let mut bad = heads.clone();
        bad[CHUNK] ^= 1;
        check_compaction("element", &c, k, &bad, Some(&lens)).unwrap_err();
        lens[7] = 2;
        check_compaction("length", &c, k, &heads, Some(&lens)).unwrap_err();

        let keep = |i: usize| data[i] < 1 << 31;
        let value = |i: usize| data[i];
        let p = Compaction { n, keep: &keep, value: &value, partition: true };
        let mut out: Vec<u32> = data.iter().copied().filter(|&x| x < 1 << 31).collect();
        let k = out.len() as u64;
        out.extend(data.iter().copied().filter(|&x| x >= 1 << 31).rev());
        check_compaction("ok", &p, k, &out, None).unwrap();
        out[n - 2] ^= 1;
        check_compaction("rejected", &p, k, &out, None).unwrap_err();
    }
}

/// The host side's phases at `2^LOG` elements (default 24), timed without a GPU: `LOG=26 cargo
/// test --release -p cohort-host --bin cohort -- --ignored host_phases --nocapture`.
#[cfg(test)]
mod timing_probe {
    use super::*;

    #[test]
    #[ignore = "a timing probe, not a test"]
    fn host_phases() {
        let log: u32 = std::env::var("LOG").map(|v| v.parse().unwrap()).unwrap_or(24);
        let n = 1usize << log;
        let gpu = Gpu::cpu().unwrap();
        let inp = Inputs::new(&gpu, n);
        let t = Instant::now();
        inp.data().unwrap();
        eprintln!("data {:?}", t.elapsed());
        let t = Instant::now();
        inp.data64().unwrap();
        eprintln!("data64 {:?}", t.elapsed());
        let t = Instant::now();
        let s32 = inp.sorted32().unwrap();
        eprintln!("sorted32 {:?}", t.elapsed());
        let t = Instant::now();
        let s64 = inp.sorted64().unwrap();
        eprintln!("sorted64 {:?}", t.elapsed());
        let mut p: Vec<(u64, u64)> = inp.data64().unwrap().host.iter().copied().zip(0..).collect();
        p.par_sort_unstable();
        let v: Vec<u64> = p.iter().map(|x| x.1).collect();
        let t = Instant::now();
        check_pairs("x", &inp.data64().unwrap().host, s64, s64, &v).unwrap();
        eprintln!("check_pairs64 {:?}", t.elapsed());
        let t = Instant::now();
        same("x", s32, s32).unwrap();
        eprintln!("same32 {:?}", t.elapsed());
        let d = &inp.data().unwrap().host;
        let mut acc = 0u32;
        let incl: Vec<u32> = d
            .iter()
            .map(|&x| {
                acc = acc.wrapping_add(x);
                acc
            })
            .collect();
        let t = Instant::now();
        check_scan("x", d, &incl, true).unwrap();
        eprintln!("check_scan {:?}", t.elapsed());
        let keep = |i: usize| d[i] < 1 << 31;
        let value = |i: usize| d[i];
        let c = Compaction { n, keep: &keep, value: &value, partition: true };
        let mut out: Vec<u32> = d.iter().copied().filter(|&x| x < 1 << 31).collect();
        let k = out.len() as u64;
        out.extend(d.iter().copied().filter(|&x| x >= 1 << 31).rev());
        let t = Instant::now();
        check_compaction("x", &c, k, &out, None).unwrap();
        eprintln!("check_partition {:?}", t.elapsed());
    }
}
