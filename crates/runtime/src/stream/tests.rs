//! The capture bookkeeping, without a GPU: the CPU device has no graphs, so these link its
//! streams to a [`Capture`] as `Stream::capture` and `Stream::wait` do, and check what the
//! gate, the tracker and the event rules make of it (the CPU driver accepts the waits).

use super::*;
use crate::StreamOptions;
use crate::device::Gpu;

fn cpu_stream(gpu: &Gpu) -> Stream {
    gpu.new_stream_with(StreamOptions::new().non_blocking(true)).unwrap()
}

/// `s` as `Stream::capture` leaves it: in `c`, its mark frozen.
fn begin(s: &Stream, c: &Arc<Capture>) {
    let mut link = s.inner.capture.write().unwrap();
    s.inner.gpu.bind().unwrap();
    s.inner.enter_capture(c, || Ok(())).unwrap();
    *link = Some(c.clone());
}

/// A capture owned by another thread.
fn foreign_capture() -> Arc<Capture> {
    std::thread::spawn(|| Arc::new(Capture::new())).join().unwrap()
}

fn is_argument<T: fmt::Debug>(r: Result<T>, needle: &str) {
    match r {
        Err(Error::Argument(m)) => assert!(m.contains(needle), "{m}"),
        other => panic!("expected an argument error mentioning {needle:?}, got {other:?}"),
    }
}

#[test]
fn a_joined_stream_s_memory_is_kept_by_the_capture() {
    let gpu = Gpu::cpu().unwrap();
    let (origin, side) = (cpu_stream(&gpu), cpu_stream(&gpu));
    let c = Arc::new(Capture::new());
    begin(&origin, &c);
    let fork = Event::untimed(&gpu).unwrap();
    fork.record(&origin).unwrap();
    assert!(fork.state.lock().unwrap().captured.as_ref().is_some_and(|e| Arc::ptr_eq(e, &c)));
    // Waiting for an event recorded in the capture joins `side` into it.
    side.wait(&fork).unwrap();
    assert!(side.inner.capture_now().is_some_and(|j| Arc::ptr_eq(&j, &c)));
    assert_eq!(c.joined.lock().unwrap().len(), 1);
    let mut buf = gpu.zeroed::<u32>(64).unwrap();
    side.fill(&mut buf, 7u32).unwrap();
    {
        let used = c.used.lock().unwrap();
        assert_eq!(used.len(), 1, "the joined stream's fill is kept by the capture");
        assert!(used[0].alloc.ptr == buf.as_device_ptr().addr() && used[0].write);
    }
    assert_eq!(buf.pending_accesses(), 0, "a captured operation is not recorded as real work");
    // Host memory, host functions, waits and queries on a joined stream are refused.
    let pinned = gpu.pinned::<u32>(64).unwrap();
    is_argument(side.copy(&pinned, &mut buf), "pinned");
    is_argument(side.host_fn(|| ()), "host function");
    is_argument(side.synchronize(), "graph capture");
    is_argument(side.query(), "graph capture");
    // The end takes it out.
    c.ended.store(true, Ordering::Release);
    assert!(side.inner.capture_now().is_none());
    side.fill(&mut buf, 9u32).unwrap();
    assert_eq!(buf.to_vec().unwrap(), vec![9u32; 64]);
    assert_eq!(c.used.lock().unwrap().len(), 1, "after the end nothing more is kept");
}

#[test]
fn other_threads_are_refused_by_streams_in_a_capture() {
    let gpu = Gpu::cpu().unwrap();
    let s = cpu_stream(&gpu);
    let c = foreign_capture();
    begin(&s, &c);
    let mut buf = gpu.upload(&[5u32; 64]).unwrap();
    let other = gpu.upload(&[6u32; 64]).unwrap();
    is_argument(s.fill(&mut buf, 1u32), "another thread");
    is_argument(s.copy(&other, &mut buf), "another thread");
    let e = Event::untimed(&gpu).unwrap();
    is_argument(e.record(&s), "another thread");
    is_argument(s.wait(&e), "another thread");
    is_argument(s.synchronize(), "another thread");
    is_argument(s.host_fn(|| ()), "another thread");
    assert!(matches!(s.capture(|_| Ok(())), Err(Error::NotOnCpu { .. })));
    assert!(c.used.lock().unwrap().is_empty(), "nothing was kept");
    // Nothing ran (the CPU device would have run it at once).
    assert_eq!(buf.to_vec().unwrap(), vec![5u32; 64]);
    c.ended.store(true, Ordering::Release);
    s.fill(&mut buf, 1u32).unwrap();
    assert_eq!(buf.to_vec().unwrap(), vec![1u32; 64]);
}

#[test]
fn events_recorded_in_a_capture_mark_no_work() {
    let gpu = Gpu::cpu().unwrap();
    let (s, plain, blocking) = (cpu_stream(&gpu), cpu_stream(&gpu), gpu.new_stream().unwrap());
    let c = Arc::new(Capture::new());
    begin(&s, &c);
    let (e, outside) = (Event::new(&gpu).unwrap(), Event::new(&gpu).unwrap());
    outside.record(&plain).unwrap();
    e.record(&s).unwrap();
    is_argument(e.synchronize(), "inside a graph capture");
    is_argument(e.query(), "inside a graph capture");
    is_argument(e.elapsed_ms_since(&outside), "inside a graph capture");
    is_argument(outside.elapsed_ms_since(&e), "inside a graph capture");
    is_argument(s.wait(&outside), "recorded outside");
    is_argument(blocking.wait(&e), "blocking");
    is_argument(gpu.legacy_stream().wait(&e), "default streams");
    is_argument(gpu.per_thread_stream().wait(&e), "default streams");
    // From another thread, a stream outside the capture cannot join it.
    let joined = std::thread::scope(|sc| sc.spawn(|| plain.wait(&e)).join().unwrap());
    is_argument(joined, "another thread");
    assert!(plain.inner.capture_now().is_none());
    // A second capture's event cannot merge into this one.
    let (s2, c2) = (cpu_stream(&gpu), Arc::new(Capture::new()));
    begin(&s2, &c2);
    let e2 = Event::untimed(&gpu).unwrap();
    e2.record(&s2).unwrap();
    is_argument(s.wait(&e2), "another");
    c2.ended.store(true, Ordering::Release);
    c.ended.store(true, Ordering::Release);
    // After the end, the event still marks a point of the ended capture until recorded again.
    is_argument(plain.wait(&e), "has ended");
    e.record(&plain).unwrap();
    plain.wait(&e).unwrap();
    e.synchronize().unwrap();
    assert!(e.elapsed_ms_since(&outside).is_ok());
}

#[test]
fn a_frozen_mark_covers_the_work_before_the_capture() {
    let gpu = Gpu::cpu().unwrap();
    let (s, reader) = (cpu_stream(&gpu), cpu_stream(&gpu));
    let mut buf = gpu.zeroed::<u32>(64).unwrap();
    s.fill(&mut buf, 3u32).unwrap();
    s.fill(&mut buf, 4u32).unwrap();
    let c = Arc::new(Capture::new());
    begin(&s, &c);
    assert_eq!(s.inner.mark.lock().unwrap().frozen_upto(), Some(2), "the mark covers both fills");
    // Host waits and other streams' waits use the frozen mark (no record on `s`).
    assert_eq!(buf.to_vec().unwrap(), vec![4u32; 64]);
    let mut out = gpu.zeroed::<u32>(64).unwrap();
    reader.copy(&buf, &mut out).unwrap();
    assert_eq!(out.to_vec().unwrap(), vec![4u32; 64]);
    c.ended.store(true, Ordering::Release);
    assert_eq!(s.inner.mark.lock().unwrap().frozen_upto(), None, "thawed once the capture ended");
}
