//! NCCL collectives over Cohort buffers (`cohort_runtime::nccl`), on every GPU present: one
//! communicator per GPU in this process (one rank on a one-GPU machine), every element checked
//! against a CPU reference; argument errors; stream ordering; two processes of one rank each
//! (needs two GPUs: NCCL refuses two ranks of one communicator on one device), the NCCL id
//! through a file or, as under torchrun, the rank from `RANK`/`WORLD_SIZE`/`LOCAL_RANK` and the
//! id over TCP from rank 0 at `MASTER_ADDR:MASTER_PORT` (issue 30 item 6); and (issue 31
//! item 9) two threads of one process each driving a rank: the same calls work, calls that
//! disagree are errors on both ranks, a rank that never calls is an error at the deadline.
//!
//! Without NCCL (`libnccl.so.2`) the tests report themselves ignored with the reason.

use std::sync::Mutex;
use std::time::Duration;

use cohort_runtime::nccl::{self, Comm, Group, NcclError, NcclType, ReduceOp};
use cohort_runtime::{Error, Gpu};
use cohort_tests::{Context, TestResult, check_all, check_all_by, ensure, gpu_only_reason, rng};
use libtest_mimic::{Completion, Failed, Trial};
use rand::Rng;

/// Set in a child process of [`nccl_two_processes`]: its rank.
pub const RANK_ENV: &str = "COHORT_TEST_NCCL_RANK";
/// Set in a child process: the id file.
const FILE_ENV: &str = "COHORT_TEST_NCCL_FILE";
/// Set in a child process: its launch comes from the launcher's variables, the id over TCP.
const FROM_ENV: &str = "COHORT_TEST_NCCL_FROM_ENV";
const PROCS: usize = 2;
const CHILD_LEN: usize = 1 << 16;

pub fn trials() -> Vec<Trial> {
    vec![
        nccl_trial("nccl_all_reduce_every_op_f32", 1, all_reduce_f32),
        nccl_trial("nccl_all_reduce_every_op_f64", 1, all_reduce_f64),
        nccl_trial("nccl_all_reduce_ints", 1, all_reduce_ints),
        nccl_trial("nccl_all_reduce_in_place", 1, all_reduce_in_place),
        nccl_trial("nccl_broadcast", 1, broadcast),
        nccl_trial("nccl_all_gather", 1, all_gather),
        nccl_trial("nccl_reduce_scatter", 1, reduce_scatter),
        nccl_trial("nccl_send_recv_ring", 1, send_recv_ring),
        nccl_trial("nccl_argument_errors", 1, argument_errors),
        nccl_trial("nccl_orders_other_streams", 1, orders_other_streams),
        nccl_trial("nccl_buffer_of_another_gpu_is_an_error", 2, other_gpu),
        nccl_trial("nccl_two_processes", 2, nccl_two_processes),
        nccl_trial("nccl_two_processes_from_env", 2, nccl_two_processes_from_env),
        nccl_trial("nccl_two_threads_one_rank_each", 2, two_threads),
        nccl_trial("nccl_mismatched_sizes_from_two_threads_is_an_err_on_both", 2, |g| mismatch(g, Mismatch::Count)),
        nccl_trial("nccl_mismatched_roots_from_two_threads_is_an_err_on_both", 2, |g| mismatch(g, Mismatch::Root)),
        nccl_trial("nccl_mismatched_sizes_of_from_rank_threads_is_an_err_on_both", 2, |g| {
            mismatch(g, Mismatch::CountFromRank)
        }),
        nccl_trial("nccl_rank_that_never_calls_is_an_err_after_the_deadline", 2, never_calls),
    ]
}

/// NCCL tests run one at a time: communicators of concurrent tests on the same GPUs could
/// wait for each other's kernels.
static NCCL_TURN: Mutex<()> = Mutex::new(());

/// A test on every GPU present (primary contexts); ignored with the reason on the CPU device,
/// without NCCL, or with fewer than `min_gpus` GPUs.
fn nccl_trial(name: &'static str, min_gpus: usize, f: fn(&[Gpu]) -> TestResult) -> Trial {
    Trial::ignorable_test(name, move || {
        if let Some(reason) = gpu_only_reason("NCCL collectives run between GPUs; the CPU device has no NCCL")? {
            return Ok(Completion::ignored_with(reason));
        }
        if let Err(e) = nccl::version() {
            return Ok(Completion::ignored_with(e.to_string()));
        }
        let n = Gpu::count().map_err(|e| Failed::from(e.to_string()))?;
        if n < min_gpus {
            return Ok(Completion::ignored_with(format!(
                "needs {min_gpus} GPUs (NCCL allows one rank of a communicator per GPU); this machine has {n}"
            )));
        }
        let _turn = NCCL_TURN.lock().unwrap_or_else(|p| p.into_inner());
        let gpus = (0..n).map(Gpu::new).collect::<Result<Vec<_>, _>>().map_err(|e| Failed::from(e.to_string()))?;
        f(&gpus).map(|()| Completion::Completed).map_err(Failed::from)
    })
    .with_kind("gpu")
}

/// Element types under test, with exact small values.
trait Elem: NcclType + Copy + PartialEq + std::fmt::Debug {
    fn from_i64(v: i64) -> Self;
    fn to_f64(self) -> f64;
}
macro_rules! elem {
    ($($t:ty),*) => {$(impl Elem for $t {
        fn from_i64(v: i64) -> Self { v as $t }
        fn to_f64(self) -> f64 { self as f64 }
    })*};
}
elem!(f32, f64, i32, u32, i64, u64);

/// Rank `r`'s data: random integers in `lo..=hi`, different per rank and element.
fn data<T: Elem>(test: &str, r: usize, len: usize, lo: i64, hi: i64) -> Vec<T> {
    let mut g = rng(&format!("{test}/{r}"));
    (0..len).map(|_| T::from_i64(g.random_range(lo..=hi))).collect()
}

/// The CPU reference of `op` over the ranks' data, in f64 (exact for the values used).
fn reference(inputs: &[Vec<f64>], op: ReduceOp) -> Vec<f64> {
    let n = inputs.len() as f64;
    (0..inputs[0].len())
        .map(|i| {
            let col = inputs.iter().map(|v| v[i]);
            match op {
                ReduceOp::Sum => col.sum(),
                ReduceOp::Prod => col.product(),
                ReduceOp::Max => col.fold(f64::MIN, f64::max),
                ReduceOp::Min => col.fold(f64::MAX, f64::min),
                ReduceOp::Avg => col.sum::<f64>() / n,
            }
        })
        .collect()
}

/// All-reduce with `op` on every GPU (one group from this thread), every element of every
/// rank's result checked.
fn all_reduce_case<T: Elem>(gpus: &[Gpu], comms: &[Comm], test: &str, op: ReduceOp, len: usize) -> TestResult {
    // Products stay exact in every type with factors 1..=3; the rest use a wider range.
    let (lo, hi) = if op == ReduceOp::Prod { (1, 3) } else { (0, 1000) };
    let host: Vec<Vec<T>> = (0..gpus.len()).map(|r| data::<T>(test, r, len, lo, hi)).collect();
    let send = gpus.iter().zip(&host).map(|(g, h)| g.upload(h)).collect::<Result<Vec<_>, _>>().ctx("upload")?;
    let mut recv = gpus.iter().map(|g| g.zeroed::<T>(len)).collect::<Result<Vec<_>, _>>().ctx("alloc")?;
    let mut group = Group::new();
    for ((c, s), r) in comms.iter().zip(&send).zip(&mut recv) {
        group.all_reduce(c, c.gpu().stream(), s, r, op).ctx("all_reduce")?;
    }
    group.run().ctx("run")?;
    let want = reference(&host.iter().map(|v| v.iter().map(|x| x.to_f64()).collect()).collect::<Vec<_>>(), op);
    for (rank, r) in recv.iter().enumerate() {
        let got: Vec<f64> = r.to_vec().ctx("download")?.iter().map(|x| x.to_f64()).collect();
        check_all_by(&format!("{test} {op:?} rank {rank}"), &got, &want, |g, w| {
            (g - w).abs() <= 1e-6 * w.abs().max(1.0)
        })?;
    }
    Ok(())
}

fn all_reduce_f32(gpus: &[Gpu]) -> TestResult {
    let comms = Comm::for_gpus(gpus).ctx("comms")?;
    for op in [ReduceOp::Sum, ReduceOp::Prod, ReduceOp::Max, ReduceOp::Min, ReduceOp::Avg] {
        all_reduce_case::<f32>(gpus, &comms, "all_reduce_f32", op, 100_003)?;
    }
    Ok(())
}

fn all_reduce_f64(gpus: &[Gpu]) -> TestResult {
    let comms = Comm::for_gpus(gpus).ctx("comms")?;
    for op in [ReduceOp::Sum, ReduceOp::Prod, ReduceOp::Max, ReduceOp::Min, ReduceOp::Avg] {
        all_reduce_case::<f64>(gpus, &comms, "all_reduce_f64", op, 65_537)?;
    }
    Ok(())
}

fn all_reduce_ints(gpus: &[Gpu]) -> TestResult {
    let comms = Comm::for_gpus(gpus).ctx("comms")?;
    for op in [ReduceOp::Sum, ReduceOp::Prod, ReduceOp::Max, ReduceOp::Min] {
        all_reduce_case::<i32>(gpus, &comms, "all_reduce_i32", op, 4099)?;
        all_reduce_case::<u32>(gpus, &comms, "all_reduce_u32", op, 4099)?;
        all_reduce_case::<i64>(gpus, &comms, "all_reduce_i64", op, 4099)?;
        all_reduce_case::<u64>(gpus, &comms, "all_reduce_u64", op, 4099)?;
    }
    Ok(())
}

fn all_reduce_in_place(gpus: &[Gpu]) -> TestResult {
    let comms = Comm::for_gpus(gpus).ctx("comms")?;
    let len = 1 << 20;
    let host: Vec<Vec<f32>> = (0..gpus.len()).map(|r| data::<f32>("in_place", r, len, -500, 500)).collect();
    let mut bufs = gpus.iter().zip(&host).map(|(g, h)| g.upload(h)).collect::<Result<Vec<_>, _>>().ctx("upload")?;
    let mut group = Group::new();
    for (c, b) in comms.iter().zip(&mut bufs) {
        group.all_reduce_in_place(c, c.gpu().stream(), b, ReduceOp::Max).ctx("all_reduce_in_place")?;
    }
    group.run().ctx("run")?;
    let want: Vec<f32> = (0..len).map(|i| host.iter().map(|h| h[i]).fold(f32::MIN, f32::max)).collect();
    for (rank, b) in bufs.iter().enumerate() {
        check_all(&format!("in-place max, rank {rank}"), &b.to_vec().ctx("download")?, &want)?;
    }
    Ok(())
}

fn broadcast(gpus: &[Gpu]) -> TestResult {
    let comms = Comm::for_gpus(gpus).ctx("comms")?;
    let (len, root) = (300_007, gpus.len() - 1);
    let host: Vec<Vec<i64>> = (0..gpus.len()).map(|r| data::<i64>("broadcast", r, len, -1 << 40, 1 << 40)).collect();
    let send = gpus.iter().zip(&host).map(|(g, h)| g.upload(h)).collect::<Result<Vec<_>, _>>().ctx("upload")?;
    let mut recv = gpus.iter().map(|g| g.zeroed::<i64>(len)).collect::<Result<Vec<_>, _>>().ctx("alloc")?;
    let mut group = Group::new();
    for ((c, s), r) in comms.iter().zip(&send).zip(&mut recv) {
        group.broadcast(c, c.gpu().stream(), s, r, root).ctx("broadcast")?;
    }
    group.run().ctx("run")?;
    for (rank, r) in recv.iter().enumerate() {
        check_all(&format!("broadcast from {root}, rank {rank}"), &r.to_vec().ctx("download")?, &host[root])?;
    }
    // In place, from rank 0, into a sub-range of each buffer.
    let mut bufs = gpus.iter().zip(&host).map(|(g, h)| g.upload(h)).collect::<Result<Vec<_>, _>>().ctx("upload")?;
    let mut group = Group::new();
    for (c, b) in comms.iter().zip(&mut bufs) {
        group.broadcast_in_place(c, c.gpu().stream(), b.slice_mut(100..len - 100), 0).ctx("broadcast_in_place")?;
    }
    group.run().ctx("run")?;
    for (rank, b) in bufs.iter().enumerate() {
        let mut want = host[rank].clone();
        want[100..len - 100].copy_from_slice(&host[0][100..len - 100]);
        check_all(&format!("broadcast in place, rank {rank}"), &b.to_vec().ctx("download")?, &want)?;
    }
    Ok(())
}

fn all_gather(gpus: &[Gpu]) -> TestResult {
    let comms = Comm::for_gpus(gpus).ctx("comms")?;
    let (n, len) = (gpus.len(), 50_021);
    let host: Vec<Vec<u32>> = (0..n).map(|r| data::<u32>("all_gather", r, len, 0, 1 << 31)).collect();
    let send = gpus.iter().zip(&host).map(|(g, h)| g.upload(h)).collect::<Result<Vec<_>, _>>().ctx("upload")?;
    let mut recv = gpus.iter().map(|g| g.zeroed::<u32>(n * len)).collect::<Result<Vec<_>, _>>().ctx("alloc")?;
    let mut group = Group::new();
    for ((c, s), r) in comms.iter().zip(&send).zip(&mut recv) {
        group.all_gather(c, c.gpu().stream(), s, r).ctx("all_gather")?;
    }
    group.run().ctx("run")?;
    let want: Vec<u32> = host.concat();
    for (rank, r) in recv.iter().enumerate() {
        check_all(&format!("all_gather, rank {rank}"), &r.to_vec().ctx("download")?, &want)?;
    }
    Ok(())
}

fn reduce_scatter(gpus: &[Gpu]) -> TestResult {
    let comms = Comm::for_gpus(gpus).ctx("comms")?;
    let (n, len) = (gpus.len(), 40_009);
    let host: Vec<Vec<f64>> = (0..n).map(|r| data::<f64>("reduce_scatter", r, n * len, -1000, 1000)).collect();
    let send = gpus.iter().zip(&host).map(|(g, h)| g.upload(h)).collect::<Result<Vec<_>, _>>().ctx("upload")?;
    let mut recv = gpus.iter().map(|g| g.zeroed::<f64>(len)).collect::<Result<Vec<_>, _>>().ctx("alloc")?;
    let mut group = Group::new();
    for ((c, s), r) in comms.iter().zip(&send).zip(&mut recv) {
        group.reduce_scatter(c, c.gpu().stream(), s, r, ReduceOp::Sum).ctx("reduce_scatter")?;
    }
    group.run().ctx("run")?;
    let sum = reference(&host, ReduceOp::Sum);
    for (rank, r) in recv.iter().enumerate() {
        check_all(
            &format!("reduce_scatter, rank {rank}"),
            &r.to_vec().ctx("download")?,
            &sum[rank * len..(rank + 1) * len],
        )?;
    }
    Ok(())
}

/// Rank `r` sends to `r + 1` and receives from `r - 1` (mod n): with one GPU, to itself.
fn send_recv_ring(gpus: &[Gpu]) -> TestResult {
    let comms = Comm::for_gpus(gpus).ctx("comms")?;
    let (n, len) = (gpus.len(), 123_457);
    let host: Vec<Vec<i32>> = (0..n).map(|r| data::<i32>("ring", r, len, i32::MIN as i64, i32::MAX as i64)).collect();
    let send = gpus.iter().zip(&host).map(|(g, h)| g.upload(h)).collect::<Result<Vec<_>, _>>().ctx("upload")?;
    let mut recv = gpus.iter().map(|g| g.zeroed::<i32>(len)).collect::<Result<Vec<_>, _>>().ctx("alloc")?;
    let mut group = Group::new();
    for ((c, s), r) in comms.iter().zip(&send).zip(&mut recv) {
        let rank = c.rank();
        group.send(c, c.gpu().stream(), s, (rank + 1) % n).ctx("send")?;
        group.recv(c, c.gpu().stream(), r, (rank + n - 1) % n).ctx("recv")?;
    }
    group.run().ctx("run")?;
    for (rank, r) in recv.iter().enumerate() {
        check_all(&format!("ring, rank {rank}"), &r.to_vec().ctx("download")?, &host[(rank + n - 1) % n])?;
    }
    Ok(())
}

fn is_argument(r: Result<(), NcclError>, what: &str, needle: &str) -> TestResult {
    match r {
        Err(NcclError::Cohort(Error::Argument(m))) if m.contains(needle) => Ok(()),
        other => Err(format!("{what}: expected an argument error mentioning {needle:?}, got {other:?}")),
    }
}

/// Lengths and ranks are checked before NCCL sees them; isolated contexts are refused.
fn argument_errors(gpus: &[Gpu]) -> TestResult {
    // One rank alone (no group needed): every error comes before NCCL is called.
    let comms = Comm::for_gpus(&gpus[..1]).ctx("comms")?;
    let (c, g) = (&comms[0], &gpus[0]);
    let s = g.stream();
    let send = g.upload(&[1.0f32; 1000]).ctx("upload")?;
    let mut small = g.zeroed::<f32>(999).ctx("alloc")?;
    is_argument(c.all_reduce(s, &send, &mut small, ReduceOp::Sum), "all_reduce into 999", "receive buffer 999")?;
    is_argument(c.broadcast(s, &send, &mut small, 0), "broadcast into 999", "must be equal")?;
    is_argument(c.all_gather(s, &send, small.slice_mut(..500)), "all_gather into 500", "need 1000")?;
    is_argument(c.reduce_scatter(s, send.slice(..998), &mut small, ReduceOp::Sum), "reduce_scatter", "need 999")?;
    is_argument(c.broadcast_in_place(s, &mut small, 1), "broadcast from rank 1 of 1", "out of range")?;
    is_argument(c.send(s, &send, 5), "send to rank 5 of 1", "out of range")?;
    // A send and a receive that do not match (to and from itself) are refused before NCCL.
    {
        let mut group = Group::new();
        group.send(c, s, &send, 0).ctx("send")?;
        group.recv(c, s, &mut small, 0).ctx("recv")?;
        is_argument(group.run(), "send 1000, receive 999", "do not match")?;
    }
    let mut pinned = g.pinned::<f32>(1000).ctx("pinned")?;
    is_argument(c.all_reduce(s, &send, &mut pinned, ReduceOp::Sum), "pinned receive", "host memory")?;
    // The buffer is still usable and untouched.
    check_all("untouched receive buffer", &small.to_vec().ctx("download")?, &vec![0.0f32; 999])?;
    let iso = Gpu::isolated(g.info().ordinal).ctx("isolated")?;
    match Comm::for_gpus(&[iso]) {
        Err(NcclError::Cohort(Error::Argument(m))) if m.contains("primary context") => {}
        other => return Err(format!("isolated context: expected an argument error, got {other:?}")),
    }
    match Comm::for_gpus(&[g.clone(), g.clone()]) {
        Err(NcclError::Cohort(Error::Argument(m))) if m.contains("twice") => Ok(()),
        other => Err(format!("a GPU twice: expected an argument error, got {other:?}")),
    }
}

/// An all-reduce on one stream, then a copy of its result on another stream and a kernel-free
/// overwrite of its input on a third: the tracker orders both after the all-reduce.
fn orders_other_streams(gpus: &[Gpu]) -> TestResult {
    let comms = Comm::for_gpus(gpus).ctx("comms")?;
    let len = 1 << 24; // long enough that an unordered copy would see zeros
    let host: Vec<Vec<f32>> = (0..gpus.len()).map(|r| data::<f32>("order", r, len, -100, 100)).collect();
    let mut send = gpus.iter().zip(&host).map(|(g, h)| g.upload(h)).collect::<Result<Vec<_>, _>>().ctx("upload")?;
    let mut recv = gpus.iter().map(|g| g.zeroed::<f32>(len)).collect::<Result<Vec<_>, _>>().ctx("alloc")?;
    let mut out = gpus.iter().map(|g| g.zeroed::<f32>(len)).collect::<Result<Vec<_>, _>>().ctx("alloc")?;
    let streams = gpus.iter().map(|g| g.new_stream()).collect::<Result<Vec<_>, _>>().ctx("stream")?;
    let others = gpus.iter().map(|g| g.new_stream()).collect::<Result<Vec<_>, _>>().ctx("stream")?;
    let mut group = Group::new();
    for (((c, s), r), st) in comms.iter().zip(&send).zip(&mut recv).zip(&streams) {
        group.all_reduce(c, st, s, r, ReduceOp::Sum).ctx("all_reduce")?;
    }
    group.run().ctx("run")?;
    for i in 0..gpus.len() {
        others[i].copy(&recv[i], &mut out[i]).ctx("copy after")?;
        others[i].fill(&mut send[i], 0.0f32).ctx("overwrite the input")?;
    }
    let want =
        reference(&host.iter().map(|v| v.iter().map(|&x| f64::from(x)).collect()).collect::<Vec<_>>(), ReduceOp::Sum);
    let want: Vec<f32> = want.iter().map(|&x| x as f32).collect();
    for (rank, o) in out.iter().enumerate() {
        check_all(&format!("copied result, rank {rank}"), &o.to_vec().ctx("download")?, &want)?;
    }
    Ok(())
}

/// A buffer or stream of GPU 1 given to rank 0's communicator is an error.
fn other_gpu(gpus: &[Gpu]) -> TestResult {
    let comms = Comm::for_gpus(&gpus[..1]).ctx("comms")?;
    let send = gpus[1].upload(&[1u32; 64]).ctx("upload")?;
    let mut recv = gpus[0].zeroed::<u32>(64).ctx("alloc")?;
    is_argument(
        comms[0].all_reduce(gpus[0].stream(), &send, &mut recv, ReduceOp::Sum),
        "send on GPU 1",
        "another GPU",
    )?;
    let send0 = gpus[0].upload(&[1u32; 64]).ctx("upload")?;
    is_argument(comms[0].all_reduce(gpus[1].stream(), &send0, &mut recv, ReduceOp::Sum), "stream of GPU 1", "stream")?;
    // Two ranks of one communicator that disagree on the count are refused before NCCL.
    let both = Comm::for_gpus(&gpus[..2]).ctx("comms")?;
    let mut b0 = gpus[0].zeroed::<u32>(64).ctx("alloc")?;
    let mut b1 = gpus[1].zeroed::<u32>(32).ctx("alloc")?;
    let mut group = Group::new();
    group.all_reduce_in_place(&both[0], gpus[0].stream(), &mut b0, ReduceOp::Sum).ctx("rank 0")?;
    group.all_reduce_in_place(&both[1], gpus[1].stream(), &mut b1, ReduceOp::Sum).ctx("rank 1")?;
    is_argument(group.run(), "counts 64 and 32", "different collectives")
}

/// Two processes of one rank each (this test binary, with [`RANK_ENV`] set), the id through a
/// file: each all-reduces its data and checks the sum.
fn nccl_two_processes(_gpus: &[Gpu]) -> TestResult {
    let file = std::env::temp_dir().join(format!("cohort-nccl-id-{}-{}", std::process::id(), line!()));
    let _ = std::fs::remove_file(&file);
    let result = two_processes(|r, c| {
        c.env(RANK_ENV, r.to_string()).env(FILE_ENV, &file);
    });
    let _ = std::fs::remove_file(&file);
    result
}

/// Two processes of one rank each, started as torchrun starts them: `RANK`, `WORLD_SIZE`,
/// `LOCAL_RANK`, `LOCAL_WORLD_SIZE`, `MASTER_ADDR=127.0.0.1`, a free `MASTER_PORT`; each reads
/// its launch from the environment, takes device `LOCAL_RANK`, gets the id from rank 0 over
/// TCP ([`Comm::from_launch`]), all-reduces its data and checks the sum.
fn nccl_two_processes_from_env(gpus: &[Gpu]) -> TestResult {
    // A local rank past the GPUs this process sees is an error naming both.
    let too_far = nccl::Launch {
        launcher: nccl::Launcher::Torch,
        rank: 0,
        world_size: 1,
        local_rank: Some(gpus.len()),
        local_world_size: None,
        rendezvous: None,
        bind: None,
        token: String::new(),
    };
    match too_far.gpu() {
        Err(NcclError::Launch(m)) => ensure(
            m.starts_with(&format!("LOCAL_RANK={}, but this process sees {} GPU(s)", gpus.len(), gpus.len())),
            || m.clone(),
        )?,
        other => return Err(format!("LOCAL_RANK past the GPUs: {other:?}")),
    }
    let port = std::net::TcpListener::bind(("127.0.0.1", 0)).and_then(|l| l.local_addr()).ctx("free port")?.port();
    two_processes(|r, c| {
        for var in
            ["COHORT_LAUNCHER", "COHORT_RENDEZVOUS_PORT", "COHORT_RENDEZVOUS_BIND", "TORCHELASTIC_USE_AGENT_STORE"]
        {
            c.env_remove(var);
        }
        c.env(RANK_ENV, r.to_string())
            .env(FROM_ENV, "1")
            .env("RANK", r.to_string())
            .env("WORLD_SIZE", PROCS.to_string())
            .env("LOCAL_RANK", r.to_string())
            .env("LOCAL_WORLD_SIZE", PROCS.to_string())
            .env("MASTER_ADDR", "127.0.0.1")
            .env("MASTER_PORT", port.to_string())
            .env("COHORT_JOB_ID", format!("cohort-test-{}-{port}", std::process::id()));
    })
}

/// Starts [`PROCS`] children of this test binary (`env` sets each one's variables), waits for
/// them, and checks that each passed.
fn two_processes(env: impl Fn(usize, &mut std::process::Command)) -> TestResult {
    let exe = std::env::current_exe().ctx("current_exe")?;
    // Every rank must be running before any can finish: spawn all, then wait.
    let children = (0..PROCS)
        .map(|r| {
            let mut c = std::process::Command::new(&exe);
            env(r, &mut c);
            c.env_remove("COHORT_DEVICE")
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
        })
        .collect::<Result<Vec<_>, _>>()
        .ctx("spawn")?;
    // A rank whose peer failed would wait in NCCL forever: once one fails (or after 5 min),
    // kill the others. (Their output is a few lines: the pipes do not fill.)
    let start = std::time::Instant::now();
    let mut children = children;
    loop {
        let mut done = 0;
        let mut failed = false;
        for c in &mut children {
            if let Some(status) = c.try_wait().ctx("wait")? {
                done += 1;
                failed |= !status.success();
            }
        }
        if done == children.len() {
            break;
        }
        if failed || start.elapsed() > Duration::from_secs(300) {
            for c in &mut children {
                let _ = c.kill();
            }
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    for (r, c) in children.into_iter().enumerate() {
        let out = c.wait_with_output().ctx("wait")?;
        let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        ensure(out.status.success(), || format!("rank {r} failed ({}):\n{text}", out.status))?;
        ensure(text.contains(&format!("rank {r} of {PROCS}: ok")), || format!("rank {r} did not report:\n{text}"))?;
    }
    Ok(())
}

/// One rank of [`nccl_two_processes`], in a child process; returns the exit status.
pub fn rank_child(rank: &str) -> i32 {
    match child(rank) {
        Ok(msg) => {
            println!("{msg}");
            0
        }
        Err(e) => {
            eprintln!("rank {rank}: {e}");
            1
        }
    }
}

fn child(rank: &str) -> Result<String, String> {
    let rank: usize = rank.parse().ctx("rank")?;
    // NCCL first, while this is the only thread (it sets NCCL_NVLS_ENABLE).
    let _ = nccl::available();
    let (gpu, comm) = if std::env::var_os(FROM_ENV).is_some() {
        let launch = nccl::Launch::from_env().ctx("launch")?;
        ensure(launch.rank == rank && launch.world_size == PROCS && launch.local_rank == Some(rank), || {
            format!("the launch read from the environment is {launch}, not rank {rank} of {PROCS}")
        })?;
        let gpu = launch.gpu().ctx("gpu")?;
        ensure(gpu.info().ordinal == rank, || format!("rank {rank} got device {}", gpu.info().ordinal))?;
        let comm = Comm::from_launch(&gpu, &launch, Duration::from_secs(60)).ctx("comm")?;
        (gpu, comm)
    } else {
        let file = std::env::var_os(FILE_ENV).ok_or("no id file")?;
        let gpu = Gpu::new(rank).ctx("gpu")?;
        let comm = Comm::from_id_file(&gpu, file.as_ref(), rank, PROCS, Duration::from_secs(60)).ctx("comm")?;
        (gpu, comm)
    };
    let mine: Vec<u64> = data::<u64>("procs", rank, CHILD_LEN, 0, 1 << 40);
    let send = gpu.upload(&mine).ctx("upload")?;
    let mut recv = gpu.zeroed::<u64>(CHILD_LEN).ctx("alloc")?;
    comm.all_reduce(gpu.stream(), &send, &mut recv, ReduceOp::Sum).ctx("all_reduce")?;
    let all: Vec<Vec<u64>> = (0..PROCS).map(|r| data::<u64>("procs", r, CHILD_LEN, 0, 1 << 40)).collect();
    let want: Vec<u64> = (0..CHILD_LEN).map(|i| all.iter().map(|v| v[i]).sum()).collect();
    check_all(&format!("rank {rank}"), &recv.to_vec().ctx("download")?, &want)?;
    // Send/receive between the processes too: rank 0 sends its data to 1, which checks it.
    let mut got = gpu.zeroed::<u64>(CHILD_LEN).ctx("alloc")?;
    let mut group = Group::new();
    if rank == 0 {
        group.send(&comm, gpu.stream(), &send, 1).ctx("send")?;
    } else {
        group.recv(&comm, gpu.stream(), &mut got, 0).ctx("recv")?;
    }
    group.run().ctx("p2p")?;
    if rank == 1 {
        check_all("received from rank 0", &got.to_vec().ctx("download")?, &all[0])?;
    }
    gpu.stream().synchronize().ctx("sync")?;
    Ok(format!("rank {rank} of {PROCS}: ok"))
}

// ---------------------------------------------------------------------------------------------
// Issue 31 item 9: ranks of one process driven from several threads

/// How long the threaded tests wait for their threads before calling it a hang.
const HANG: Duration = Duration::from_secs(120);

/// Runs `f(rank, comm)` on a thread per communicator; their results (each with its
/// communicator, kept alive until every thread is done), or an error if they have not all
/// returned within [`HANG`] (the threads are left behind).
fn on_threads<T: Send + 'static>(
    comms: Vec<Comm>,
    f: impl Fn(usize, &Comm) -> T + Send + Sync + Clone + 'static,
) -> Result<Vec<(T, Comm)>, String> {
    let n = comms.len();
    let (tx, rx) = std::sync::mpsc::channel();
    for (rank, comm) in comms.into_iter().enumerate() {
        let (tx, f) = (tx.clone(), f.clone());
        std::thread::spawn(move || {
            let r = f(rank, &comm);
            let _ = tx.send((rank, r, comm));
        });
    }
    let until = std::time::Instant::now() + HANG;
    let mut got: Vec<Option<(T, Comm)>> = (0..n).map(|_| None).collect();
    for _ in 0..n {
        let left = until.saturating_duration_since(std::time::Instant::now());
        let (rank, r, comm) = rx
            .recv_timeout(left)
            .map_err(|_| format!("the ranks' threads did not all return within {} s: a hang", HANG.as_secs()))?;
        got[rank] = Some((r, comm));
    }
    Ok(got.into_iter().map(|g| g.expect("every rank sent")).collect())
}

/// Two threads, one rank each (no group), the same all-reduces: every element right.
fn two_threads(gpus: &[Gpu]) -> TestResult {
    let comms = Comm::for_gpus(&gpus[..2]).ctx("comms")?;
    const LEN: usize = 30_011;
    let results = on_threads(comms, |rank, comm| -> Result<Vec<Vec<i64>>, String> {
        let mut out = Vec::new();
        for round in 0..4 {
            let mine = data::<i64>(&format!("threads/{round}"), rank, LEN, -1000, 1000);
            let mut buf = comm.gpu().upload(&mine).ctx("upload")?;
            comm.all_reduce_in_place(comm.gpu().stream(), &mut buf, ReduceOp::Sum).ctx("all_reduce")?;
            out.push(buf.to_vec().ctx("download")?);
        }
        Ok(out)
    })?;
    for (rank, (r, _)) in results.into_iter().enumerate() {
        let r = r.map_err(|e| format!("rank {rank}: {e}"))?;
        for (round, got) in r.iter().enumerate() {
            let (a, b) = (
                data::<i64>(&format!("threads/{round}"), 0, LEN, -1000, 1000),
                data::<i64>(&format!("threads/{round}"), 1, LEN, -1000, 1000),
            );
            let want: Vec<i64> = a.iter().zip(&b).map(|(x, y)| x + y).collect();
            check_all(&format!("rank {rank} round {round}"), got, &want)?;
        }
    }
    Ok(())
}

#[derive(Clone, Copy, Debug)]
enum Mismatch {
    /// All-reduces of 64 and 32 elements (communicators of `Comm::for_gpus`).
    Count,
    /// Broadcasts from root 0 and from root 1.
    Root,
    /// All-reduces of 64 and 32 elements (each thread's rank made by `Comm::from_rank`).
    CountFromRank,
}

/// Rank 0 and rank 1, each on a thread of its own, make calls that disagree: each gets an
/// error — its call is refused, or (when the other's call came first and was enqueued) its
/// stream's wait fails — naming both ranks and what differs; no hang; both communicators are
/// aborted and refuse later calls. (On a GPU before issue 31 this hung, or worse.)
fn mismatch(gpus: &[Gpu], which: Mismatch) -> TestResult {
    let comms = match which {
        Mismatch::CountFromRank => {
            let id = nccl::NcclId::new().ctx("id")?;
            let made = on_threads_make(gpus, id)?;
            made.into_iter().collect::<Result<Vec<_>, _>>().ctx("from_rank")?
        }
        _ => Comm::for_gpus(&gpus[..2]).ctx("comms")?,
    };
    let results = on_threads(comms, move |rank, comm| -> (Result<(), NcclError>, Result<(), Error>) {
        let s = comm.gpu().stream();
        let mut buf = match comm.gpu().upload(&vec![rank as u32 + 1; if rank == 0 { 64 } else { 32 }]) {
            Ok(b) => b,
            Err(e) => return (Err(e.into()), Ok(())),
        };
        let called = match which {
            Mismatch::Count | Mismatch::CountFromRank => comm.all_reduce_in_place(s, buf.slice_mut(..), ReduceOp::Sum),
            Mismatch::Root => comm.broadcast_in_place(s, buf.slice_mut(..32), rank),
        };
        let waited = s.synchronize();
        (called, waited)
    })?;
    let field = match which {
        Mismatch::Root => "root",
        _ => "count",
    };
    for (rank, ((called, waited), comm)) in results.iter().enumerate() {
        let text = match (called, waited) {
            // Refused; or aborted by the other rank's refusal before it reached NCCL.
            (Err(e @ (NcclError::Mismatch(_) | NcclError::Aborted(_))), _) => e.to_string(),
            // Enqueued first: its wait fails.
            (Ok(()), Err(e @ Error::CollectiveAborted(_))) => e.to_string(),
            other => {
                return Err(format!(
                    "{which:?}: rank {rank}: expected an error from the call or its wait, got {other:?}"
                ));
            }
        };
        ensure(text.contains("ranks 0 and 1") && text.contains(field), || {
            format!("{which:?}: rank {rank}'s error does not name both ranks and the {field}: {text}")
        })?;
        ensure(comm.aborted().is_some(), || format!("{which:?}: rank {rank}'s communicator was not aborted"))?;
        let mut b = comm.gpu().zeroed::<u32>(8).ctx("alloc")?;
        match comm.all_reduce_in_place(comm.gpu().stream(), &mut b, ReduceOp::Sum) {
            Err(NcclError::Aborted(_)) => {}
            other => return Err(format!("{which:?}: rank {rank}: a call after the abort gave {other:?}")),
        }
    }
    Ok(())
}

/// Rank `r` of `id` made by `Comm::from_rank` on thread `r` (they must all call at once).
fn on_threads_make(gpus: &[Gpu], id: nccl::NcclId) -> Result<Vec<Result<Comm, NcclError>>, String> {
    let (tx, rx) = std::sync::mpsc::channel();
    for (rank, gpu) in gpus[..2].iter().enumerate() {
        let (tx, gpu) = (tx.clone(), gpu.clone());
        std::thread::spawn(move || {
            let _ = tx.send((rank, Comm::from_rank(&gpu, &id, rank, 2)));
        });
    }
    let mut got: Vec<Option<Result<Comm, NcclError>>> = vec![None, None];
    for _ in 0..2 {
        let (rank, c) = rx.recv_timeout(HANG).map_err(|_| "Comm::from_rank did not return: a hang".to_string())?;
        got[rank] = Some(c);
    }
    Ok(got.into_iter().map(|c| c.expect("both sent")).collect())
}

/// Rank 0 all-reduces, rank 1 (alive, in this process) never does: with a 2 s deadline,
/// rank 0's call or its stream's wait fails within seconds, naming the deadline; the
/// communicator is aborted; later calls are refused.
fn never_calls(gpus: &[Gpu]) -> TestResult {
    let mut comms = Comm::for_gpus(&gpus[..2]).ctx("comms")?;
    comms[0].set_timeout(Duration::from_secs(2));
    let rank1 = comms.pop().expect("two");
    let t0 = std::time::Instant::now();
    let results = on_threads(comms, |_, comm| -> (Result<(), NcclError>, Result<(), Error>) {
        let s = comm.gpu().stream();
        let mut buf = match comm.gpu().upload(&[1.0f32; 1000]) {
            Ok(b) => b,
            Err(e) => return (Err(e.into()), Ok(())),
        };
        let called = comm.all_reduce_in_place(s, &mut buf, ReduceOp::Sum);
        (called, s.synchronize())
    })?;
    let took = t0.elapsed();
    let ((called, waited), comm0) = &results[0];
    let text = match (called, waited) {
        (Err(e @ NcclError::Aborted(_)), _) => e.to_string(),
        (Ok(()), Err(e @ Error::CollectiveAborted(_))) => e.to_string(),
        other => return Err(format!("expected an error after the deadline, got {other:?}")),
    };
    eprintln!("rank 0 alone, after {:.1} s: {text}", took.as_secs_f64());
    ensure(text.contains("within 2.0 s"), || format!("the error does not name the deadline: {text}"))?;
    ensure(took < Duration::from_secs(60), || format!("took {:.1} s for a 2 s deadline", took.as_secs_f64()))?;
    ensure(comm0.aborted().is_some() && rank1.aborted().is_some(), || "the communicator was not aborted".to_string())?;
    let mut b = rank1.gpu().zeroed::<f32>(8).ctx("alloc")?;
    match rank1.all_reduce_in_place(rank1.gpu().stream(), &mut b, ReduceOp::Sum) {
        Err(NcclError::Aborted(_)) => Ok(()),
        other => Err(format!("rank 1's call after the abort gave {other:?}")),
    }
}
