//! `Send`, `Sync` and threads: every handle as it should be, graphs and modules shared between threads.

use super::*;

/// `T: Send + Sync`.
pub(super) fn shared_between_threads<T: Send + Sync + ?Sized>() {}

/// Fails to compile (an ambiguous impl) when `T: Send`: a token that proves a thread owns
/// something must not move to another thread.
trait NotSend<A> {
    fn check() {}
}
impl<T: ?Sized> NotSend<()> for T {}
impl<T: ?Sized + Send> NotSend<u8> for T {}

/// Fails to compile when `T: Sync`.
trait NotSync<A> {
    fn check() {}
}
impl<T: ?Sized> NotSync<()> for T {}
impl<T: ?Sized + Sync> NotSync<u8> for T {}

pub(super) fn send_sync(c: &Ctx) -> TestResult {
    use cohort_runtime::*;
    // Every runtime handle may be used from any thread (each is internally synchronized).
    shared_between_threads::<Gpu>();
    shared_between_threads::<Stream>();
    shared_between_threads::<Event>();
    shared_between_threads::<Module>();
    shared_between_threads::<Function>();
    shared_between_threads::<DeviceBuffer<u32>>();
    shared_between_threads::<DeviceView<'static, u32>>();
    shared_between_threads::<DeviceViewMut<'static, u32>>();
    shared_between_threads::<Graph>();
    shared_between_threads::<GraphExec>();
    shared_between_threads::<PinnedBuffer<u32>>();
    shared_between_threads::<PinnedView<'static, u32>>();
    shared_between_threads::<PinnedViewMut<'static, u32>>();
    shared_between_threads::<Registered<'static, u32>>();
    shared_between_threads::<ManagedBuffer<u32>>();
    shared_between_threads::<MemPool>();
    shared_between_threads::<AppendBuffer<u32>>();
    shared_between_threads::<GridVecBuffer<u32>>();
    shared_between_threads::<MultiGrid>();
    shared_between_threads::<MultiGridVecBuffer<u32>>();
    shared_between_threads::<Symbol<u32>>();
    shared_between_threads::<Pipeline<u32, u32>>();
    shared_between_threads::<MatrixMut<'static, u32>>();
    shared_between_threads::<MatrixRef<'static, u32>>();
    shared_between_threads::<k::hostile_fill>();
    // A communicator is used by one thread at a time (NCCL's rule): Send, not Sync.
    fn sendable<T: Send>() {}
    sendable::<nccl::Comm>();
    <nccl::Comm as NotSync<_>>::check();
    // Raw device pointers are for `unsafe` kernels only: neither.
    <DevicePtr<u32> as NotSend<_>>::check();
    <DevicePtrMut<u32> as NotSend<_>>::check();
    // What proves that a thread owns an element, or hands out such proofs, stays on its thread
    // (on the CPU device a kernel may use `std`: a `Send` token could cross to another kernel
    // thread through a `static Mutex`, and two threads would write one element).
    use cohort::cg::GridVec;
    use cohort::cg::{MultiGridIndex, MultiGridStride, MultiGridVec};
    use cohort::slice::{AppendSlice, DisjointSlice, ThreadIndex};
    use cohort::thread::GridStride;
    <ThreadIndex as NotSend<_>>::check();
    <ThreadIndex<cohort::slice::PerBlock> as NotSend<_>>::check();
    <GridStride as NotSend<_>>::check();
    <GridStride as NotSync<_>>::check();
    <MultiGridIndex as NotSend<_>>::check();
    <MultiGridIndex as NotSync<_>>::check();
    <MultiGridStride as NotSend<_>>::check();
    <MultiGridStride as NotSync<_>>::check();
    <DisjointSlice<'static, u32> as NotSend<_>>::check();
    <AppendSlice<'static, u32> as NotSend<_>>::check();
    <GridVec<'static, u32> as NotSend<_>>::check();
    <MultiGridVec<'static, u32> as NotSend<_>>::check();
    <cohort::mutex::MutexGuard<'static, cohort::atomic::Global> as NotSend<_>>::check();

    // And at run time: one launcher, one module, one event shared by 4 threads, each with its
    // own stream and output, one input buffer read by all.
    let n = c.pick(1usize << 18, 1 << 12);
    let fill = k::hostile_fill::load(&c.tests).ctx("load")?;
    let outs: Vec<Result<Vec<u32>, String>> = std::thread::scope(|scope| {
        let hs: Vec<_> = (0..4u32)
            .map(|t| {
                let (fill, gpu) = (&fill, &c.gpu);
                scope.spawn(move || -> Result<Vec<u32>, String> {
                    let s = gpu.new_stream().ctx("stream")?;
                    let mut out = gpu.zeroed::<u32>(n).ctx("alloc")?;
                    for round in 0..5 {
                        fill.launch(&s, LaunchConfig::for_elements(n, 256), 100 * t + round, &mut out).ctx("launch")?;
                    }
                    out.to_vec().ctx("read")
                })
            })
            .collect();
        hs.into_iter().map(|h| h.join().unwrap_or_else(|_| Err("a thread panicked".into()))).collect()
    });
    for (t, got) in outs.into_iter().enumerate() {
        let want: Vec<u32> = (0..n as u32).map(|i| (100 * t as u32 + 4).wrapping_add(i)).collect();
        check_all(&format!("thread {t}"), &got?, &want)?;
    }
    Ok(())
}

pub(super) fn graph_threads(c: &Ctx) -> TestResult {
    let n = 1usize << 16;
    let fill = k::hostile_fill::load(&c.tests).ctx("load")?;
    let s = c.gpu.new_stream_with(StreamOptions::new().non_blocking(true)).ctx("stream")?;
    let mut bufs: Vec<_> = (0..8).map(|_| c.gpu.zeroed::<u32>(n)).collect::<Result<_, _>>().ctx("alloc")?;
    let graph = s
        .capture(|s| {
            for (b, buf) in bufs.iter_mut().enumerate() {
                fill.launch(s, LaunchConfig::for_elements(n, 256), 1000 * b as u32, buf)?;
            }
            Ok(())
        })
        .ctx("capture")?;
    let exec = graph.instantiate().ctx("instantiate")?;
    // Eight threads instantiate the one graph and replay the one instance, each on its own
    // stream, at once: the driver forbids concurrent use of one graph (or instance), so the
    // handles must serialize it themselves.
    let results: Vec<TestResult> = std::thread::scope(|scope| {
        let hs: Vec<_> = (0..8)
            .map(|_| {
                let (graph, exec, gpu) = (&graph, &exec, &c.gpu);
                scope.spawn(move || -> TestResult {
                    let st = gpu.new_stream_with(StreamOptions::new().non_blocking(true)).ctx("stream")?;
                    for _ in 0..20 {
                        let own = graph.instantiate().ctx("instantiate")?;
                        own.launch(&st).ctx("replay own instance")?;
                        exec.launch(&st).ctx("replay shared instance")?;
                        ensure(graph.node_count().ctx("count")? == 8, || "node count".into())?;
                    }
                    st.synchronize().ctx("synchronize")
                })
            })
            .collect();
        hs.into_iter().map(|h| h.join().unwrap_or_else(|_| Err("a thread panicked".into()))).collect()
    });
    for r in results {
        r?;
    }
    for (b, buf) in bufs.iter().enumerate() {
        let want: Vec<u32> = (0..n as u32).map(|i| (1000 * b as u32).wrapping_add(i)).collect();
        check_all(&format!("buffer {b} after concurrent replays"), &buf.to_vec().ctx("read")?, &want)?;
    }
    Ok(())
}

/// A module of its own (so that dropping it unloads it): the test kernels again.
pub(super) fn own_module(c: &Ctx) -> Result<Module, String> {
    c.gpu.load_with(&cohort_test_kernels::PTX, LoadOptions::new().threads_per_block(512)).ctx("load module")
}

pub(super) fn module_dropped(c: &Ctx) -> TestResult {
    let n = c.pick(1usize << 16, 1 << 10);
    let s = c.gpu.new_stream().ctx("stream")?;
    let mut out = c.gpu.zeroed::<u32>(n).ctx("alloc")?;
    {
        let module = own_module(c)?;
        let slow = k::hostile_slow::load(&module).ctx("load")?;
        // Runs for 300 ms on a GPU: the module and its launcher are gone long before it ends.
        slow.launch(&s, LaunchConfig::for_elements(n, 256), c.pick(300_000_000u64, 1_000_000), 21, &mut out)
            .ctx("launch")?;
    }
    let want: Vec<u32> = (0..n as u32).map(|i| 21u32.wrapping_add(i)).collect();
    check_all("written by a kernel whose module was dropped while it ran", &out.to_vec().ctx("read")?, &want)?;
    // The device is still healthy: the shared module's kernels run.
    let fill = k::hostile_fill::load(&c.tests).ctx("load")?;
    fill.launch(&s, LaunchConfig::for_elements(n, 256), 5, &mut out).ctx("launch")?;
    let want: Vec<u32> = (0..n as u32).map(|i| 5u32.wrapping_add(i)).collect();
    check_all("after", &out.to_vec().ctx("read")?, &want)
}

pub(super) fn graph_outlives_module(c: &Ctx) -> TestResult {
    let n = 1usize << 16;
    let s = c.gpu.new_stream_with(StreamOptions::new().non_blocking(true)).ctx("stream")?;
    let mut out = c.gpu.zeroed::<u32>(n).ctx("alloc")?;
    let exec = {
        let module = own_module(c)?;
        let fill = k::hostile_fill::load(&module).ctx("load")?;
        let graph = s.capture(|s| fill.launch(s, LaunchConfig::for_elements(n, 256), 77, &mut out)).ctx("capture")?;
        graph.instantiate().ctx("instantiate")?
        // The module, its launcher and the graph are dropped here; the instance stays.
    };
    out.fill_zero().ctx("zero")?;
    for _ in 0..3 {
        exec.launch(&s).ctx("replay after the module was dropped")?;
    }
    let want: Vec<u32> = (0..n as u32).map(|i| 77u32.wrapping_add(i)).collect();
    check_all("replayed from a dropped module", &out.to_vec().ctx("read")?, &want)
}
