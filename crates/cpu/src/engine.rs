//! Launch: validate, spread blocks over worker threads, run each block, collect the first error.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Condvar, Mutex};

use corosensei::stack::DefaultStack;

use crate::cluster::ClusterTable;
use crate::ctx::{CTX, Ctx};
use crate::device_launch::Scope;
use crate::error::CpuError;
use crate::print::PrintScope;
use crate::sched::{BlockCfg, BlockRun, GridAt, Outcome, panic_error, tid_of};
use crate::shared::{BlockShared, SHARED_CAPACITY};
use crate::{Dim3, LaunchSpec, Mode};

/// Threads the CPU device keeps resident at once in a cooperative launch.
///
/// Each is a coroutine with its own stack mapping (two memory maps with its guard page), and
/// Linux allows 65530 maps per process by default (`vm.max_map_count`).
pub const MAX_COOPERATIVE_THREADS: u64 = 16 * 1024;

/// Blocks of `block_threads` threads the CPU device runs at once: the largest cooperative grid
/// of that block size it accepts (as `cudaOccupancyMaxActiveBlocksPerMultiprocessor` times the
/// multiprocessors bounds a GPU's).
#[must_use]
pub fn max_coresident_blocks(block_threads: u32) -> u64 {
    (MAX_COOPERATIVE_THREADS / u64::from(block_threads.max(1))).max(1)
}

/// Thread stacks kept between launches (mapping and unmapping them is most of a small launch's
/// cost): `(bytes, stack)`, at most [`POOL_MAX`].
static STACKS: Mutex<Vec<(usize, DefaultStack)>> = Mutex::new(Vec::new());
const POOL_MAX: usize = 4096;

/// Up to `n` pooled stacks of `bytes`.
fn take_stacks(bytes: usize, n: usize) -> Vec<DefaultStack> {
    let mut pool = STACKS.lock().unwrap_or_else(|p| p.into_inner());
    let mut out = Vec::new();
    let mut i = 0;
    while i < pool.len() && out.len() < n {
        if pool[i].0 == bytes {
            out.push(pool.swap_remove(i).1);
        } else {
            i += 1;
        }
    }
    out
}

/// Gives a worker's stacks back to the pool.
fn give_stacks(bytes: usize, stacks: Vec<DefaultStack>) {
    let mut pool = STACKS.lock().unwrap_or_else(|p| p.into_inner());
    let room = POOL_MAX.saturating_sub(pool.len());
    pool.extend(stacks.into_iter().take(room).map(|s| (bytes, s)));
}

/// The first error of a launch, and whether there is one.
struct Failure {
    flag: AtomicBool,
    err: Mutex<Option<CpuError>>,
}

impl Failure {
    fn set(&self, e: CpuError) {
        let mut g = self.err.lock().unwrap_or_else(|p| p.into_inner());
        if g.is_none() {
            *g = Some(e);
        }
        self.flag.store(true, Ordering::Release);
    }
    fn is_set(&self) -> bool {
        self.flag.load(Ordering::Acquire)
    }
}

/// The grid barrier of a cooperative launch.
struct GridBar {
    total: u64,
    m: Mutex<GridState>,
    cv: Condvar,
}

#[derive(Default)]
struct GridState {
    arrived: u64,
    finished: u64,
    generation: u64,
    abort: bool,
    /// The first block to arrive in this generation, and where.
    waiting: Option<(Dim3, GridAt)>,
    exited: Option<Dim3>,
}

impl GridBar {
    fn lock(&self) -> std::sync::MutexGuard<'_, GridState> {
        self.m.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Checks the barrier after an arrival or an exit; completes it or reports a block that
    /// exited while others wait.
    fn check(&self, s: &mut GridState) -> Result<(), CpuError> {
        if s.arrived > 0 && s.arrived + s.finished == self.total {
            if let (Some(exited), Some((waiting, at))) = (s.exited, s.waiting) {
                s.abort = true;
                self.cv.notify_all();
                return Err(CpuError::GridSyncExited { waiting_block: waiting, site: at.site, exited_block: exited });
            }
            s.arrived = 0;
            s.waiting = None;
            s.generation += 1;
            self.cv.notify_all();
        }
        Ok(())
    }

    /// A block arrives at a grid sync; returns the generation it waits in. A block at another
    /// grid sync than the first block of the generation (another call site or instruction) ends
    /// the launch: on a GPU the two would pass each other's barrier.
    fn arrive(&self, block: Dim3, at: GridAt) -> Result<u64, CpuError> {
        let mut s = self.lock();
        let generation = s.generation;
        if let Some((first_block, first)) = s.waiting
            && (first.site != at.site || first.token != at.token)
        {
            s.abort = true;
            self.cv.notify_all();
            return Err(CpuError::GridSyncMismatch {
                first_block,
                first: (first.op, first.site, first.token),
                second_block: block,
                second: (at.op, at.site, at.token),
            });
        }
        s.arrived += 1;
        s.waiting.get_or_insert((block, at));
        self.check(&mut s)?;
        Ok(generation)
    }

    fn finish(&self, block: Dim3) -> Result<(), CpuError> {
        let mut s = self.lock();
        s.finished += 1;
        s.exited.get_or_insert(block);
        self.check(&mut s)
    }

    /// Waits until generation `g` completes; `false` when the launch is aborted instead.
    fn wait(&self, g: u64) -> bool {
        let mut s = self.lock();
        while s.generation == g && !s.abort {
            s = self.cv.wait(s).unwrap_or_else(|p| p.into_inner());
        }
        !s.abort
    }

    fn abort(&self) {
        self.lock().abort = true;
        self.cv.notify_all();
    }
}

pub(crate) fn validate(spec: &LaunchSpec) -> Result<(), CpuError> {
    let bad = |reason: String| Err(CpuError::InvalidLaunch { reason });
    let (g, b) = (spec.grid, spec.block);
    if g.volume() == 0 || b.volume() == 0 {
        return bad(format!("grid {g} and block {b} must have no zero extent"));
    }
    if b.volume() > 1024 {
        return bad(format!("block {b} has {} threads; the limit is 1024", b.volume()));
    }
    if b.x > 1024 || b.y > 1024 || b.z > 64 {
        return bad(format!("block {b} exceeds the per-dimension limits (1024, 1024, 64)"));
    }
    if g.y > 65535 || g.z > 65535 {
        return bad(format!("grid {g} exceeds the y and z limits (65535)"));
    }
    if spec.dynamic_shared_bytes as usize > SHARED_CAPACITY {
        return bad(format!(
            "{} bytes of dynamic shared memory; a block has {SHARED_CAPACITY}",
            spec.dynamic_shared_bytes
        ));
    }
    if let Some(c) = spec.cluster {
        if c.volume() == 0 || g.x % c.x != 0 || g.y % c.y != 0 || g.z % c.z != 0 {
            return bad(format!("cluster {c} does not divide grid {g}"));
        }
        let limit = max_coresident_blocks(b.volume() as u32);
        if c.volume() > 1 && g.volume() > limit {
            return bad(format!(
                "a launch of {} blocks of {} threads in clusters of {c}: the CPU device runs the blocks of a cluster \
                 launch all at once, and at most {limit} blocks of this size",
                g.volume(),
                b.volume()
            ));
        }
    }
    if spec.cooperative {
        let limit = max_coresident_blocks(b.volume() as u32);
        if g.volume() > limit {
            return Err(CpuError::CooperativeTooLarge { blocks: g.volume(), block_threads: b.volume() as u32, limit });
        }
    }
    Ok(())
}

/// Runs `kernel` once per CUDA thread of the launch `spec` describes, and returns when every
/// thread has returned, or with the launch's first error (a panic, a deadlock, a divergent
/// collective, a race): then the threads still suspended are dropped (their stacks unwind).
///
/// # Errors
/// [`CpuError`]: see each variant.
pub fn launch(spec: &LaunchSpec, kernel: &(dyn Fn() + Sync)) -> Result<(), CpuError> {
    launch_typed(spec, kernel)
}

/// [`launch`] for a kernel of a known type: the fast path's thread loop is compiled for it
/// (the kernel inlined into the loop, no indirect call per thread).
///
/// # Errors
/// As for [`launch`].
pub fn launch_typed<K: Fn() + Sync + ?Sized>(spec: &LaunchSpec, kernel: &K) -> Result<(), CpuError> {
    // The launch's place in a tree of device-side launches, if the runtime (or the parent
    // grid, for a child) gave it one: its threads may launch children, run after it.
    let scope = Scope::enter(spec);
    // Its printf output: the host launch's buffer (a child grid shares its parent's), written
    // when the host launch returns (`print`).
    let print = PrintScope::enter();
    validate(spec)?;
    crate::hook::install();
    let blocks = spec.grid.volume();
    let workers = spec
        .workers
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
        .max(1)
        .min(usize::try_from(blocks).unwrap_or(usize::MAX));
    let dyn_kernel = &|| kernel();
    let clusters = spec.cluster.map(|d| ClusterTable::new(spec.grid, d, spec.block.volume()));
    // Clusters of several blocks: every block resident at once, as in a cooperative launch.
    let resident = spec.cooperative || spec.cluster.is_some_and(|d| d.volume() > 1);
    let grid_split = crate::split::GridSplit::new(blocks);
    let cfg = BlockCfg {
        kernel: dyn_kernel,
        bdim: spec.block,
        gdim: spec.grid,
        cooperative: spec.cooperative,
        cluster: clusters.as_ref(),
        grid_split: spec.cooperative.then_some(&grid_split),
        seed: spec.random_schedule,
        stack: spec.stack_bytes,
        spin_limit: spec.spin_limit,
    };
    let fail = Failure { flag: AtomicBool::new(false), err: Mutex::new(None) };
    let grid = GridBar { total: blocks, m: Mutex::new(GridState::default()), cv: Condvar::new() };
    let next = AtomicU64::new(0);
    // Blocks a worker takes at once from the shared counter.
    let chunk = (blocks / (workers as u64 * 16)).clamp(1, 64);
    let work = |w: usize| {
        let _grid = scope.install();
        let _print = print.install();
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            if resident {
                coop_worker(spec, &cfg, w, workers, &grid, &fail);
            } else {
                worker(spec, &cfg, kernel, &next, chunk, &fail);
            }
        }));
        if let Err(p) = r {
            // A bug of the engine itself: end the launch rather than leave other workers
            // waiting at a grid sync.
            let msg = p.downcast_ref::<&str>().map(|s| (*s).to_owned()).or_else(|| p.downcast_ref::<String>().cloned());
            fail.set(CpuError::InvalidLaunch { reason: format!("internal error of the CPU engine: {msg:?}") });
            grid.abort();
        }
    };
    // A launch from inside a kernel (a device-side launch) runs its blocks on this OS thread
    // too: the launching thread's context comes back afterwards.
    let saved = CTX.with(std::cell::Cell::get);
    if workers == 1 {
        work(0);
    } else {
        std::thread::scope(|s| {
            for w in 1..workers {
                let work = &work;
                s.spawn(move || work(w));
            }
            work(0);
        });
    }
    CTX.with(|c| c.set(saved));
    match fail.err.into_inner().unwrap_or_else(|p| p.into_inner()) {
        Some(e) => Err(e),
        // The grid has completed: its children run now (`device_launch`).
        None => scope.run_children(),
    }
}

/// A worker of a normal launch: takes chunks of blocks until there are none or one failed.
fn worker<K: Fn() + Sync + ?Sized>(
    spec: &LaunchSpec,
    cfg: &BlockCfg<'_>,
    kernel: &K,
    next: &AtomicU64,
    chunk: u64,
    fail: &Failure,
) {
    let total = spec.grid.volume();
    // A cluster launch registers its blocks' windows: never the fast path.
    let mode = if cfg.cluster.is_some() { Mode::Threads } else { spec.mode };
    let mut stacks = match mode {
        Mode::Threads => take_stacks(cfg.stack, cfg.bdim.volume() as usize),
        Mode::Loop => Vec::new(),
    };
    let mut shared = Some(Box::new(BlockShared::new()));
    loop {
        let start = next.fetch_add(chunk, Ordering::Relaxed);
        if start >= total {
            give_stacks(cfg.stack, stacks);
            return;
        }
        for b in start..(start + chunk).min(total) {
            if fail.is_set() {
                return;
            }
            let sh = shared.take().expect("the worker's shared window");
            let r = match mode {
                Mode::Loop => {
                    let r = run_fast(spec, cfg, kernel, b, &sh);
                    shared = Some(sh);
                    r
                }
                Mode::Threads => {
                    let base = sh.base();
                    match BlockRun::new(cfg, b, sh, spec.dynamic_shared_bytes, spec.race_check, &mut stacks) {
                        Ok(mut run) => {
                            if let Some(t) = cfg.cluster {
                                t.start(b, base);
                            }
                            let r = loop {
                                match run.run(cfg) {
                                    Ok(Outcome::Done) => break Ok(()),
                                    Ok(Outcome::Yielded) if !fail.is_set() => std::thread::yield_now(),
                                    Ok(Outcome::Yielded) => break Ok(()),
                                    Ok(Outcome::Parked(_)) => {
                                        unreachable!("grid sync is refused outside cooperative launches")
                                    }
                                    Err(e) => break Err(e),
                                }
                            };
                            if let Some(t) = cfg.cluster {
                                t.finish(b);
                            }
                            shared = Some(run.recycle(&mut stacks));
                            r
                        }
                        Err(e) => Err(e),
                    }
                }
            };
            if let Err(e) = r {
                fail.set(e);
                return;
            }
        }
    }
}

/// The fast path: every thread of block `b` as one iteration of a loop, no coroutines.
fn run_fast<K: Fn() + Sync + ?Sized>(
    spec: &LaunchSpec,
    cfg: &BlockCfg<'_>,
    kernel: &K,
    b: u64,
    sh: &BlockShared,
) -> Result<(), CpuError> {
    let g = cfg.gdim;
    let bid = Dim3::new(
        (b % u64::from(g.x)) as u32,
        ((b / u64::from(g.x)) % u64::from(g.y)) as u32,
        (b / (u64::from(g.x) * u64::from(g.y))) as u32,
    );
    sh.reset(spec.dynamic_shared_bytes, spec.race_check.then_some(cfg.bdim.volume() as usize), cfg.cluster.is_some());
    let ctx = Ctx {
        active: true,
        bid,
        bdim: cfg.bdim,
        gdim: g,
        rank: 0,
        grid_base: b * cfg.bdim.volume(),
        cooperative: cfg.cooperative,
        yielder: core::ptr::null(),
        block: sh,
        cluster: cfg.cluster.map_or(core::ptr::null(), |t| t as *const _),
        cluster_phase: crate::cluster::NO_PHASE,
        split: 0,
        grid_split: cfg.grid_split.map_or(core::ptr::null(), |g| g as *const _),
    };
    let d = cfg.bdim;
    CTX.with(|c| c.set(ctx));
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        for rank in 0..d.volume() as u32 {
            crate::ctx::set_rank(rank);
            kernel();
        }
    }));
    let here = CTX.with(|c| c.replace(Ctx::NONE));
    r.map_err(|p| panic_error(p, bid, tid_of(here.rank, d)))
}

/// A worker of a cooperative launch: owns blocks `w, w + workers, …`, all resident at once,
/// and runs each until it finishes or parks at a grid sync.
fn coop_worker(spec: &LaunchSpec, cfg: &BlockCfg<'_>, w: usize, workers: usize, grid: &GridBar, fail: &Failure) {
    let mine = (spec.grid.volume() - w as u64).div_ceil(workers as u64);
    let mut stacks = take_stacks(cfg.stack, (mine * cfg.bdim.volume()) as usize);
    let mut blocks: Vec<(BlockRun, bool, bool)> = Vec::new();
    for b in (w as u64..spec.grid.volume()).step_by(workers) {
        let sh = Box::new(BlockShared::new());
        let base = sh.base();
        match BlockRun::new(cfg, b, sh, spec.dynamic_shared_bytes, spec.race_check, &mut stacks) {
            Ok(run) => {
                if let Some(t) = cfg.cluster {
                    t.start(b, base);
                }
                blocks.push((run, false, false));
            }
            Err(e) => {
                fail.set(e);
                grid.abort();
                return;
            }
        }
    }
    let mut generation = 0;
    loop {
        let mut spinning = false;
        for (run, parked, done) in blocks.iter_mut() {
            if *parked || *done {
                continue;
            }
            if fail.is_set() {
                return;
            }
            let r = run.run(cfg).and_then(|o| match o {
                Outcome::Done => {
                    *done = true;
                    if let Some(t) = cfg.cluster {
                        t.finish(run.rank());
                    }
                    grid.finish(run.idx)
                }
                Outcome::Parked(at) => {
                    *parked = true;
                    generation = grid.arrive(run.idx, at)?;
                    Ok(())
                }
                Outcome::Yielded => {
                    spinning = true;
                    Ok(())
                }
            });
            if let Err(e) = r {
                fail.set(e);
                grid.abort();
                return;
            }
        }
        if blocks.iter().all(|b| b.2) {
            for (run, _, _) in blocks {
                drop(run.recycle(&mut stacks));
            }
            give_stacks(cfg.stack, stacks);
            return;
        }
        if spinning {
            // A spinning block waits for something another block (maybe one of this worker's)
            // does: run them all again.
            std::thread::yield_now();
            continue;
        }
        if !grid.wait(generation) {
            return;
        }
        for (run, parked, _) in blocks.iter_mut() {
            if *parked {
                run.release_grid();
                *parked = false;
            }
        }
    }
}
