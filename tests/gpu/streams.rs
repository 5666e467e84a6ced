//! Streams and events, host functions, the default streams, graphs and a leak check — every
//! result against a CPU reference. The stream-ordering rules are `track.rs`'s, pinned memory
//! `pinned.rs`'s, copies and fills `memory.rs`'s.
//!
//! On the CPU device, whose streams run each piece of work when it is enqueued, the ordering
//! holds by construction: the same tests check every value there (without the slow kernels'
//! waits), and those that measure asynchrony itself (event queries) or use graphs are
//! GPU-only.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use cohort_runtime::{DeviceBuffer, Error, Event, LaunchConfig, Stream, StreamOptions};
use cohort_test_kernels::streams as k;
use cohort_tests::{Context, Ctx, TestResult, check_all, ensure, gpu_only_trial, gpu_only_trial_alone, gpu_trial, rng};
use libtest_mimic::Trial;
use rand::Rng;

pub fn trials() -> Vec<Trial> {
    vec![
        gpu_only_trial_alone(
            "streams_events_priorities_and_query",
            "event timing, stream priorities and queries while a kernel runs; the CPU device finishes work at enqueue",
            events,
        ),
        gpu_trial("streams_host_functions_run_in_order", host_functions),
        gpu_trial("streams_legacy_and_per_thread_default_streams", default_streams),
        gpu_only_trial(
            "streams_graph_capture_and_replay",
            "CUDA graphs (Stream::capture), which the CPU device does not have",
            graphs,
        ),
        gpu_only_trial("streams_graph_capture_keeps_the_memory_of_joined_streams", GRAPHS, capture_fork_join),
        gpu_only_trial("streams_graph_capture_refuses_other_threads", GRAPHS, capture_other_threads),
        gpu_only_trial(
            "streams_graph_capture_leaves_earlier_work_to_other_threads_and_streams",
            GRAPHS,
            capture_meanwhile,
        ),
        gpu_only_trial("streams_graph_capture_events_unjoined_forks_and_panics", GRAPHS, capture_events),
        gpu_only_trial_alone(
            "streams_many_streams_launches_and_pinned_allocations_do_not_leak",
            "a leak check of device memory (memory_info) over 5.8 million launches on 64 streams",
            no_leaks,
        ),
    ]
}

pub(crate) const N: usize = 1 << 16;
/// Why the graph tests are GPU-only.
const GRAPHS: &str = "CUDA graphs (Stream::capture), which the CPU device does not have";
/// A writer that sleeps this long first: long enough that an unordered reader overtakes it.
pub(crate) const SLOW_NS: u64 = 20_000_000;

/// How long the slow kernels wait: [`SLOW_NS`] on a GPU; nothing on the CPU device, whose
/// streams run each launch to its end when it is enqueued (no reader can overtake a writer
/// there, so a wait would only cost time: every value is still checked).
pub(crate) fn slow(c: &Ctx, ns: u64) -> u64 {
    c.pick(ns, 0)
}

pub(crate) fn non_blocking(c: &Ctx) -> Result<Stream, String> {
    c.gpu.new_stream_with(StreamOptions::new().non_blocking(true)).ctx("stream")
}

pub(crate) fn cfg(n: usize) -> LaunchConfig {
    LaunchConfig::for_elements(n, 256)
}

fn events(c: &Ctx) -> TestResult {
    let (least, greatest) = c.gpu.stream_priority_range().ctx("priorities")?;
    ensure(greatest <= least, || format!("priority range ({least}, {greatest})"))?;
    let hi = c.gpu.new_stream_with(StreamOptions::new().priority(greatest)).ctx("high-priority stream")?;
    ensure(hi.priority().ctx("priority")? == greatest, || "priority not kept".into())?;
    let w = k::slow_write::load(&c.tests).ctx("load")?;
    let mut buf = c.gpu.zeroed::<u32>(N).ctx("alloc")?;
    let (start, end) = (Event::new(&c.gpu).ctx("event")?, Event::new(&c.gpu).ctx("event")?);
    start.record(&hi).ctx("record")?;
    w.launch(&hi, cfg(N), &mut buf, 1, 10_000_000).ctx("writer")?;
    hi.record(&end).ctx("record")?;
    ensure(!end.query().ctx("query")?, || "the event completed before the 10 ms kernel".into())?;
    ensure(!hi.query().ctx("query")?, || "the stream was idle during the 10 ms kernel".into())?;
    end.synchronize().ctx("wait")?;
    let ms = end.elapsed_ms_since(&start).ctx("elapsed")?;
    ensure((9.5..500.0).contains(&ms), || format!("a 10 ms kernel timed at {ms} ms"))?;
    ensure(hi.query().ctx("query")?, || "stream busy after its last event".into())?;
    // An untimed event orders streams but has no time.
    let (u0, u1) = (Event::untimed(&c.gpu).ctx("untimed")?, Event::untimed(&c.gpu).ctx("untimed")?);
    u0.record(&hi).ctx("record")?;
    u1.record(&hi).ctx("record")?;
    u1.synchronize().ctx("wait")?;
    ensure(u1.elapsed_ms_since(&u0).is_err(), || "elapsed time of untimed events".into())?;
    // `wait`: a stream waits for another's event (work enqueued untracked, through the raw
    // handle, relies on it).
    let other = non_blocking(c)?;
    w.launch(&hi, cfg(N), &mut buf, 2, 10_000_000).ctx("writer")?;
    hi.record(&u0).ctx("record")?;
    other.wait(&u0).ctx("wait")?;
    let mark = Event::new(&c.gpu).ctx("event")?;
    other.record(&mark).ctx("record")?;
    mark.synchronize().ctx("sync")?;
    ensure(u0.query().ctx("query")?, || "the waiting stream went past the event".into())
}

fn host_functions(c: &Ctx) -> TestResult {
    let s = non_blocking(c)?;
    let w = k::slow_write::load(&c.tests).ctx("load")?;
    let mut buf = c.gpu.zeroed::<u32>(N).ctx("alloc")?;
    let log = Arc::new(Mutex::new(Vec::new()));
    let ran = Arc::new(AtomicUsize::new(0));
    for i in 0..5u32 {
        w.launch(&s, cfg(N), &mut buf, i, slow(c, 2_000_000)).ctx("writer")?;
        let (log, ran) = (log.clone(), ran.clone());
        s.host_fn(move || {
            log.lock().unwrap().push(i);
            ran.fetch_add(1, Ordering::SeqCst);
        })
        .ctx("host fn")?;
    }
    // (On the CPU device each kernel has finished when its launch returns, so its host function
    // may run at once.)
    ensure(c.is_cpu() || ran.load(Ordering::SeqCst) < 5, || "host functions ran before their kernels".into())?;
    s.synchronize().ctx("sync")?;
    ensure(*log.lock().unwrap() == vec![0, 1, 2, 3, 4], || format!("order {:?}", log.lock().unwrap()))?;
    // A panicking host function is reported by the next synchronize, and the stream goes on.
    s.host_fn(|| panic!("deliberate host-function panic")).ctx("host fn")?;
    match s.synchronize() {
        Err(Error::HostFnPanicked(m)) if m.contains("deliberate") => {}
        other => return Err(format!("expected HostFnPanicked, got {other:?}")),
    }
    w.launch(&s, cfg(N), &mut buf, 3, 0).ctx("after the panic")?;
    s.synchronize().ctx("sync")?;
    check_all("kernel after the panic", &buf.to_vec().ctx("read")?, &(3..3 + N as u32).collect::<Vec<_>>())?;
    // A host function that reads a buffer written before it on its own stream, while this
    // thread waits to read it too: Cohort refuses the call inside the host function (it would
    // deadlock: the read waits for the stream, the stream waits for the host function).
    let shared = Arc::new(Mutex::new(buf));
    w.launch(&s, cfg(N), &mut *shared.lock().unwrap(), 8, slow(c, SLOW_NS)).ctx("writer")?;
    let (inner, seen) = (shared.clone(), Arc::new(Mutex::new(None)));
    let seen2 = seen.clone();
    s.host_fn(move || {
        let r = inner.try_lock().map(|b| b.to_vec());
        *seen2.lock().unwrap() = Some(match r {
            Ok(Ok(_)) => "read".to_string(),
            Ok(Err(e)) => e.to_string(),
            Err(_) => "locked".to_string(),
        });
    })
    .ctx("host fn")?;
    s.synchronize().ctx("sync")?;
    let seen = seen.lock().unwrap().clone().unwrap_or_default();
    ensure(seen.contains("inside a host function"), || format!("inside the host function: {seen}"))?;
    let buf = shared.lock().unwrap();
    check_all("after the refused read", &buf.to_vec().ctx("read")?, &(8..8 + N as u32).collect::<Vec<_>>())
}

fn default_streams(c: &Ctx) -> TestResult {
    let legacy = c.gpu.legacy_stream();
    let per_thread = c.gpu.per_thread_stream();
    let w = k::slow_write::load(&c.tests).ctx("load")?;
    let r = k::copy_u32::load(&c.tests).ctx("load")?;
    let mut buf = c.gpu.zeroed::<u32>(N).ctx("alloc")?;
    let mut out = c.gpu.zeroed::<u32>(N).ctx("alloc")?;
    w.launch(&legacy, cfg(N), &mut buf, 1, slow(c, SLOW_NS)).ctx("legacy writer")?;
    r.launch(&non_blocking(c)?, cfg(N), &buf, &mut out).ctx("non-blocking reader")?;
    check_all("after the legacy stream", &out.to_vec().ctx("read")?, &(1..1 + N as u32).collect::<Vec<_>>())?;
    // The per-thread stream of another thread writes; this thread's stream reads.
    std::thread::scope(|sc| {
        sc.spawn(|| w.launch(&per_thread, cfg(N), &mut buf, 2, slow(c, SLOW_NS))).join().map_err(|_| "thread panicked")
    })?
    .ctx("per-thread writer")?;
    r.launch(&per_thread, cfg(N), &buf, &mut out).ctx("per-thread reader")?;
    per_thread.synchronize().ctx("sync")?;
    check_all("per-thread streams of two threads", &out.to_vec().ctx("read")?, &(2..2 + N as u32).collect::<Vec<_>>())
}

fn graphs(c: &Ctx) -> TestResult {
    let s = non_blocking(c)?;
    let add = k::add_in_place::load(&c.tests).ctx("load")?;
    let r = k::copy_u32::load(&c.tests).ctx("load")?;
    let w = k::slow_write::load(&c.tests).ctx("load")?;
    let mut rng = rng("graphs");
    let input: Vec<u32> = (0..N).map(|_| rng.random_range(0..1 << 20)).collect();
    let mut buf = c.gpu.upload(&input).ctx("alloc")?;
    let mut out = c.gpu.zeroed::<u32>(N).ctx("alloc")?;
    let graph = s
        .capture(|s| {
            add.launch(s, cfg(N), &mut buf, 1)?;
            add.launch(s, cfg(N), &mut buf, 2)?;
            r.launch(s, cfg(N), &buf, &mut out)?;
            s.fill(out.slice_mut(..10), 0)?;
            Ok(())
        })
        .ctx("capture")?;
    ensure(graph.node_count().ctx("nodes")? == 4, || "expected 4 nodes".into())?;
    check_all("capturing runs nothing", &buf.to_vec().ctx("read")?, &input)?;
    let exec = graph.instantiate().ctx("instantiate")?;
    for _ in 0..10 {
        exec.launch(&s).ctx("replay")?;
    }
    let want: Vec<u32> = input.iter().map(|v| v + 30).collect();
    check_all("10 replays", &buf.to_vec().ctx("read")?, &want)?;
    let mut want_out = want.clone();
    want_out[..10].fill(0);
    check_all("the replayed copy and fill", &out.to_vec().ctx("read")?, &want_out)?;
    // A replay on another stream waits for a slow writer of its memory.
    let s2 = non_blocking(c)?;
    w.launch(&s2, cfg(N), &mut buf, 100, SLOW_NS).ctx("writer")?;
    exec.launch(&s).ctx("replay")?;
    let want: Vec<u32> = (0..N as u32).map(|i| 100 + i + 3).collect();
    check_all("replay after another stream's writer", &buf.to_vec().ctx("read")?, &want)?;
    // The graph keeps its memory alive: replaying after the buffers are dropped is safe.
    drop(buf);
    drop(out);
    exec.launch(&s).ctx("replay after drop")?;
    s.synchronize().ctx("sync")?;
    // Launch checks still apply inside a capture; pinned memory and host functions are refused.
    let pinned = c.gpu.pinned::<u32>(16).ctx("pinned")?;
    let mut small = c.gpu.zeroed::<u32>(16).ctx("alloc")?;
    let e = s
        .capture(|s| {
            s.copy(&pinned, &mut small)?;
            Ok(())
        })
        .err()
        .ok_or("captured pinned memory")?;
    ensure(e.to_string().contains("pinned"), || e.to_string())?;
    let e = s.capture(|s| s.host_fn(|| ())).err().ok_or("captured a host function")?;
    ensure(e.to_string().contains("host function"), || e.to_string())?;
    let e = s
        .capture(|s| add.launch(s, LaunchConfig::new(1, 4096), &mut small, 1))
        .err()
        .ok_or("captured an impossible launch")?;
    ensure(matches!(e, Error::InvalidLaunch { .. }), || e.to_string())?;
    // The stream works normally after failed captures.
    add.launch(&s, cfg(16), &mut small, 4).ctx("after failed captures")?;
    check_all("after failed captures", &small.to_vec().ctx("read")?, &[4u32; 16])?;
    ensure(c.gpu.legacy_stream().capture(|_| Ok(())).is_err(), || "captured the legacy stream".into())?;
    let blocking = c.gpu.new_stream().ctx("stream")?;
    let e = blocking.capture(|_| Ok(())).err().ok_or("captured a blocking stream")?;
    ensure(e.to_string().contains("non-blocking"), || format!("blocking-stream capture refused with: {e}"))
}

/// `r` must be an `Error::Argument` whose message contains `needle`.
fn argument<T: std::fmt::Debug>(what: &str, r: Result<T, Error>, needle: &str) -> TestResult {
    match r {
        Err(Error::Argument(m)) if m.contains(needle) => Ok(()),
        other => Err(format!("{what}: expected an argument error mentioning {needle:?}, got {other:?}")),
    }
}

fn add_each(v: &[u32], k: u32) -> Vec<u32> {
    v.iter().map(|x| x + k).collect()
}

/// A capture that forks to a second stream and joins back through events: the second
/// stream's work is captured, and the graph keeps the memory it uses. Dropping that buffer and
/// allocating one of the same size (which the allocator tends to place at the freed address)
/// must leave the new one untouched by replays.
fn capture_fork_join(c: &Ctx) -> TestResult {
    let (s, side) = (non_blocking(c)?, non_blocking(c)?);
    let add = k::add_in_place::load(&c.tests).ctx("load")?;
    let mut rng = rng("capture_fork_join");
    let main_in: Vec<u32> = (0..N).map(|_| rng.random_range(0..1 << 20)).collect();
    let side_in: Vec<u32> = (0..N).map(|_| rng.random_range(0..1 << 20)).collect();
    let mut main = c.gpu.upload(&main_in).ctx("alloc")?;
    let mut side_buf = c.gpu.upload(&side_in).ctx("alloc")?;
    let side_addr = side_buf.as_device_ptr().addr();
    let graph = s
        .capture(|s| {
            let fork = Event::untimed(&c.gpu)?;
            fork.record(s)?;
            side.wait(&fork)?; // `side` joins the capture
            add.launch(&side, cfg(N), &mut side_buf, 5)?; // only the joined stream uses `side_buf`
            add.launch(s, cfg(N), &mut main, 1)?;
            let join = Event::untimed(&c.gpu)?;
            join.record(&side)?;
            s.wait(&join) // joined back
        })
        .ctx("capture")?;
    ensure(graph.node_count().ctx("nodes")? == 2, || "expected the 2 kernels of both streams".into())?;
    let kept = format!("{graph:?}");
    ensure(kept.contains("allocations: 2") && kept.contains("modules: 1"), || {
        format!("the graph keeps both streams' memory and the kernels' module: {kept}")
    })?;
    check_all("capturing ran nothing on the joined stream", &side_buf.to_vec().ctx("read")?, &side_in)?;
    let exec = graph.instantiate().ctx("instantiate")?;
    drop(graph);
    drop(side_buf);
    let fresh_in: Vec<u32> = (0..N as u32).map(|i| i.wrapping_mul(2_654_435_761)).collect();
    let fresh = c.gpu.upload(&fresh_in).ctx("alloc")?;
    let at = if fresh.as_device_ptr().addr() == side_addr { "at" } else { "beside" };
    for _ in 0..3 {
        exec.launch(&s).ctx("replay")?;
    }
    s.synchronize().ctx("sync")?;
    check_all(
        &format!("a new buffer {at} the dropped one's address, after replays"),
        &fresh.to_vec().ctx("read")?,
        &fresh_in,
    )?;
    check_all("the capturing stream's output after 3 replays", &main.to_vec().ctx("read")?, &add_each(&main_in, 3))?;
    // The joined stream is out of the capture: its work runs again.
    let mut after = c.gpu.upload(&side_in).ctx("alloc")?;
    add.launch(&side, cfg(N), &mut after, 2).ctx("launch after the capture")?;
    side.synchronize().ctx("sync")?;
    check_all("the joined stream after the capture", &after.to_vec().ctx("read")?, &add_each(&side_in, 2))
}

/// While a stream captures, another thread's launches into it (or into a stream joined into the
/// capture), event records on it and waits for it are refused — they would go into the graph
/// and never run where their caller expects — and nothing of them runs or is captured; after
/// the capture the same work from that thread runs.
fn capture_other_threads(c: &Ctx) -> TestResult {
    let (s, side) = (non_blocking(c)?, non_blocking(c)?);
    let add = k::add_in_place::load(&c.tests).ctx("load")?;
    let mut rng = rng("capture_other_threads");
    let input: Vec<u32> = (0..N).map(|_| rng.random_range(0..1 << 20)).collect();
    let mut mine = c.gpu.upload(&input).ctx("alloc")?;
    let mut theirs = c.gpu.upload(&input).ctx("alloc")?;
    let mut theirs_side = c.gpu.upload(&input).ctx("alloc")?;
    let mut refusals: Vec<(&str, Result<(), Error>)> = Vec::new();
    let graph = s
        .capture(|s| {
            let fork = Event::untimed(&c.gpu)?;
            fork.record(s)?;
            side.wait(&fork)?;
            add.launch(&side, cfg(N), &mut mine, 1)?;
            let from_another_thread = std::thread::scope(|sc| {
                sc.spawn(|| {
                    let ev = Event::untimed(&c.gpu);
                    vec![
                        ("a launch into the capturing stream", add.launch(s, cfg(N), &mut theirs, 7)),
                        ("a launch into the joined stream", add.launch(&side, cfg(N), &mut theirs_side, 9)),
                        (
                            "an event recorded on the capturing stream",
                            ev.as_ref().map_err(Clone::clone).and_then(|e| e.record(s)),
                        ),
                        ("a fill on the joined stream", side.fill(&mut theirs_side, 3u32)),
                        ("a synchronize of the joined stream", side.synchronize()),
                    ]
                })
                .join()
            });
            refusals = from_another_thread.map_err(|_| Error::Argument("the other thread panicked".into()))?;
            let join = Event::untimed(&c.gpu)?;
            join.record(&side)?;
            s.wait(&join)
        })
        .ctx("capture")?;
    for (what, r) in refusals {
        argument(&format!("{what}, from another thread during a capture"), r, "another thread")?;
    }
    ensure(graph.node_count().ctx("nodes")? == 1, || "only the capturing thread's kernel is in the graph".into())?;
    check_all("the other thread's buffer (capturing stream)", &theirs.to_vec().ctx("read")?, &input)?;
    check_all("the other thread's buffer (joined stream)", &theirs_side.to_vec().ctx("read")?, &input)?;
    // Not lost: refused with an error, and after the capture the same work from that thread runs.
    std::thread::scope(|sc| {
        sc.spawn(|| -> Result<(), Error> {
            add.launch(&s, cfg(N), &mut theirs, 7)?;
            add.launch(&side, cfg(N), &mut theirs_side, 9)?;
            s.synchronize()?;
            side.synchronize()
        })
        .join()
    })
    .map_err(|_| "the other thread panicked".to_string())?
    .ctx("the other thread, after the capture")?;
    check_all("the other thread's launch after the capture", &theirs.to_vec().ctx("read")?, &add_each(&input, 7))?;
    check_all("its launch on the other stream", &theirs_side.to_vec().ctx("read")?, &add_each(&input, 9))?;
    check_all("capturing ran nothing", &mine.to_vec().ctx("read")?, &input)?;
    graph.instantiate().ctx("instantiate")?.launch(&s).ctx("replay")?;
    check_all("the replay", &mine.to_vec().ctx("read")?, &add_each(&input, 1))
}

/// While a stream captures, other threads still see its work from *before* the capture as
/// real work: a host read waits for it, another stream's kernel is ordered after it (without
/// joining the capture), and a buffer it used can be freed.
fn capture_meanwhile(c: &Ctx) -> TestResult {
    let (s, s3) = (non_blocking(c)?, non_blocking(c)?);
    let w = k::slow_write::load(&c.tests).ctx("load")?;
    let r = k::copy_u32::load(&c.tests).ctx("load")?;
    let add = k::add_in_place::load(&c.tests).ctx("load")?;
    let input: Vec<u32> = (0..N as u32).map(|i| i * 3).collect();
    let mut buf = c.gpu.upload(&vec![u32::MAX; N]).ctx("alloc")?;
    let mut inner = c.gpu.upload(&input).ctx("alloc")?;
    let mut out = c.gpu.zeroed::<u32>(N).ctx("alloc")?;
    let want: Vec<u32> = (0..N as u32).map(|i| 40 + i).collect();
    // A slow writer on `s` before the capture.
    w.launch(&s, cfg(N), &mut buf, 40, SLOW_NS).ctx("writer")?;
    let mut seen = Vec::new();
    let graph = s
        .capture(|s| {
            add.launch(s, cfg(N), &mut inner, 1)?;
            seen = std::thread::scope(|sc| {
                sc.spawn(|| -> Result<Vec<u32>, Error> {
                    // A kernel on another stream reading the writer's output: ordered after the
                    // writer (not joined into the capture).
                    r.launch(&s3, cfg(N), &buf, &mut out)?;
                    s3.synchronize()?;
                    // A host read of it: waits for the writer (not for the capture).
                    buf.to_vec()
                })
                .join()
            })
            .map_err(|_| Error::Argument("the other thread panicked".into()))??;
            Ok(())
        })
        .ctx("capture with another thread reading the stream's earlier output")?;
    check_all("the host read from another thread during the capture", &seen, &want)?;
    check_all("another stream's kernel during the capture", &out.to_vec().ctx("read")?, &want)?;
    ensure(graph.node_count().ctx("nodes")? == 1, || "another stream's kernel was captured".into())?;
    // A buffer the stream used before the capture, freed by another thread during it.
    let mut doomed = c.gpu.zeroed::<u32>(N).ctx("alloc")?;
    w.launch(&s, cfg(N), &mut doomed, 50, SLOW_NS).ctx("writer")?;
    let graph2 = s
        .capture(|s| {
            add.launch(s, cfg(N), &mut inner, 10)?;
            std::thread::scope(|sc| sc.spawn(|| drop(doomed)).join())
                .map_err(|_| Error::Argument("the other thread panicked".into()))
        })
        .ctx("capture with another thread freeing a buffer of the stream's earlier work")?;
    let exec = graph.instantiate().ctx("instantiate")?;
    let exec2 = graph2.instantiate().ctx("instantiate")?;
    exec.launch(&s).ctx("replay")?;
    exec2.launch(&s).ctx("replay")?;
    check_all("both graphs replayed", &inner.to_vec().ctx("read")?, &add_each(&input, 11))
}

/// Events recorded inside a capture mark points of the graph, not real work; forks that are
/// not joined back, and panics inside the capture, leave every stream usable.
fn capture_events(c: &Ctx) -> TestResult {
    let (s, side, other) = (non_blocking(c)?, non_blocking(c)?, non_blocking(c)?);
    let add = k::add_in_place::load(&c.tests).ctx("load")?;
    let input: Vec<u32> = (0..N as u32).map(|i| i ^ 0x5555).collect();
    let mut buf = c.gpu.upload(&input).ctx("alloc")?;
    let ev = Event::new(&c.gpu).ctx("event")?;
    let outside = Event::untimed(&c.gpu).ctx("event")?;
    outside.record(&other).ctx("record")?;
    let blocking = c.gpu.new_stream().ctx("stream")?;
    let legacy = c.gpu.legacy_stream();
    let mut inside: Vec<(&str, Result<(), Error>, &str)> = Vec::new();
    let graph = s
        .capture(|s| {
            ev.record(s)?;
            inside = vec![
                ("waiting on the host for a captured event", ev.synchronize(), "inside a graph capture"),
                ("querying a captured event", ev.query().map(drop), "inside a graph capture"),
                ("timing a captured event", ev.elapsed_ms_since(&ev).map(drop), "inside a graph capture"),
                ("the capturing stream waiting for an event from outside", s.wait(&outside), "recorded outside"),
                ("a blocking stream joining the capture", blocking.wait(&ev), "blocking"),
                ("the legacy stream joining the capture", legacy.wait(&ev), "default streams"),
                ("synchronizing the capturing stream", s.synchronize(), "graph capture"),
                ("querying the capturing stream", s.query().map(drop), "graph capture"),
            ];
            add.launch(s, cfg(N), &mut buf, 1)
        })
        .ctx("capture")?;
    for (what, r, needle) in inside {
        argument(what, r, needle)?;
    }
    ensure(graph.node_count().ctx("nodes")? == 1, || "expected 1 node".into())?;
    // After the capture, the event still marks a point of the (ended) capture.
    argument("waiting for an event of an ended capture", other.wait(&ev), "has ended")?;
    argument("waiting on the host for it", ev.synchronize(), "inside a graph capture")?;
    ev.record(&other).ctx("record outside a capture")?;
    ev.synchronize().ctx("an event recorded again outside a capture")?;
    // A fork that is not joined back: the capture fails, and both streams work afterwards.
    let mut forked = c.gpu.upload(&input).ctx("alloc")?;
    let unjoined = s.capture(|s| {
        let fork = Event::untimed(&c.gpu)?;
        fork.record(s)?;
        side.wait(&fork)?;
        add.launch(&side, cfg(N), &mut forked, 3)
    });
    ensure(unjoined.is_err(), || "a capture with a fork not joined back succeeded".into())?;
    // A panic inside a capture with a stream joined.
    let panicked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        s.capture(|s| {
            let fork = Event::untimed(&c.gpu)?;
            fork.record(s)?;
            side.wait(&fork)?;
            add.launch(&side, cfg(N), &mut forked, 4)?;
            panic!("deliberate panic inside a capture")
        })
    }));
    ensure(panicked.is_err(), || "the capture did not panic".into())?;
    add.launch(&side, cfg(N), &mut forked, 5).ctx("the forked stream after the failed captures")?;
    add.launch(&s, cfg(N), &mut buf, 6).ctx("the capturing stream after them")?;
    side.synchronize().ctx("sync")?;
    s.synchronize().ctx("sync")?;
    check_all("nothing of the failed captures ran", &forked.to_vec().ctx("read")?, &add_each(&input, 5))?;
    graph.instantiate().ctx("instantiate")?.launch(&s).ctx("replay")?;
    check_all("the graph after the failed captures", &buf.to_vec().ctx("read")?, &add_each(&input, 7))
}

/// Resident set and locked memory of this process, from /proc (kB).
fn proc_kb(field: &str) -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| s.lines().find(|l| l.starts_with(field)).and_then(|l| l.split_whitespace().nth(1)?.parse().ok()))
        .unwrap_or(0)
}

/// Runs [`leak_scenario`] in a process of its own (other tests allocate concurrently in this
/// one, which would blur its resident-memory figures) and reports its figures.
fn no_leaks(_: &Ctx) -> TestResult {
    let exe = std::env::current_exe().ctx("current_exe")?;
    let out = cohort_tests::output_within(std::process::Command::new(exe).env(crate::launch::CHILD_ENV, "leaks"), 300)?;
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    ensure(out.status.success(), || format!("leak scenario failed ({}):\n{text}", out.status))?;
    println!("{}", text.trim());
    Ok(())
}

/// 64 streams × 3·10^4 launches, twice (each stream's own buffer, and every 1000th launch reading one
/// shared buffer), then 10^4 pinned allocations: device memory, resident memory and the
/// buffers' records must not grow.
pub fn leak_scenario() -> Result<(), String> {
    let gpu = cohort_runtime::Gpu::from_env().ctx("gpu")?;
    let tests = gpu
        .load_with(&cohort_test_kernels::PTX, cohort_runtime::LoadOptions::new().threads_per_block(512))
        .ctx("load")?;
    let touch = k::touch::load(&tests).ctx("load")?;
    let r = k::copy_u32::load(&tests).ctx("load")?;
    let launches = std::env::var("COHORT_LEAK_LAUNCHES").ok().and_then(|v| v.parse().ok()).unwrap_or(30_000usize);
    let mut bufs: Vec<DeviceBuffer<u32>> =
        (0..64).map(|_| gpu.zeroed::<u32>(256)).collect::<Result<_, _>>().ctx("alloc")?;
    let shared = gpu.zeroed::<u32>(256).ctx("alloc")?;
    // One round to warm up, then two measured ones, all the same: the driver sets up its
    // per-stream and per-launch pools lazily and keeps them, sized by the launches in flight (on
    // an H200, driver 580, a warm-up of 10^3 launches per stream left 36 MiB more to be taken by
    // a round of 10^5, with or without this session's runtime changes; with equal rounds, the
    // first measured round still took those 36 MiB in one run of the full suite out of three).
    // Free memory is device-wide, so another process's frees and allocations move it too. What
    // a leak adds grows with every round's launches: the check is that one of the two measured
    // rounds ends with as much free memory as it began (within 2 MiB).
    let mut figures = Vec::new();
    for (round, n) in [(0, launches), (1, launches), (2, launches)] {
        gpu.synchronize().ctx("sync")?;
        let (free0, _) = gpu.memory_info().ctx("memory")?;
        let rss0 = proc_kb("VmRSS:");
        let t = Instant::now();
        {
            let streams: Vec<Stream> = (0..64)
                .map(|_| gpu.new_stream_with(StreamOptions::new().non_blocking(true)))
                .collect::<Result<_, _>>()
                .ctx("streams")?;
            for i in 0..n {
                for (s, b) in streams.iter().zip(bufs.iter_mut()) {
                    if i % 1000 == 0 {
                        // Every stream also reads one shared buffer now and then.
                        r.launch(s, cfg(256), &shared, &mut *b).ctx("reader")?;
                    } else {
                        touch.launch(s, cfg(256), &mut *b).ctx("launch")?;
                    }
                }
            }
            for s in &streams {
                s.synchronize().ctx("sync")?;
            }
            let pending = shared.pending_accesses();
            ensure(pending <= 64, || format!("{pending} accesses recorded on the shared buffer"))?;
            ensure(bufs[0].pending_accesses() <= 2, || format!("{} accesses on a buffer", bufs[0].pending_accesses()))?;
        }
        let launch_s = t.elapsed().as_secs_f64();
        for i in 0..n / 10 {
            let mut p = gpu.pinned::<u8>(4096 + i % 7 * 4096).ctx("pinned")?;
            p.as_mut_slice().ctx("host")?[0] = 1;
        }
        gpu.synchronize().ctx("sync")?;
        let (free1, _) = gpu.memory_info().ctx("memory")?;
        let rss1 = proc_kb("VmRSS:");
        figures.push((round, n, launch_s, free0, free1, rss0, rss1));
    }
    drop(bufs);
    drop(shared);
    let (_, n, launch_s, free0, free1, rss0, rss1) = figures[2];
    let (_, _, _, free0a, free1a, _, _) = figures[1];
    println!(
        "leak check (after a warm-up round): {n} launches on each of 64 streams ({:.2} µs per launch, 64 streams \
         made and dropped), then {} pinned allocations, twice: device free {free0a} -> {free1a} B, then {free0} -> \
         {free1} B; RSS {rss0} -> {rss1} kB",
        launch_s * 1e6 / (n as f64 * 64.0),
        n / 10
    );
    let kept = |before: usize, after: usize| after + (2 << 20) >= before;
    ensure(kept(free0a, free1a) || kept(free0, free1), || {
        format!("device memory: {free0a} -> {free1a} B free in one round, {free0} -> {free1} B in the next")
    })?;
    ensure(rss1 < rss0 + 8 * 1024, || format!("RSS grew from {rss0} kB to {rss1} kB"))
}
