//! One block's threads as coroutines, and the meeting points where they wait for each other.
//!
//! A round runs every runnable thread of the block (in rank order, or a seeded random order)
//! until it blocks at a [`Wait`] or returns. Then the scheduler completes what it can: warp
//! collectives whose every named lane is at the same call, block and named barriers that have
//! their threads, and only when nothing else can move, `activemask` (the lanes of a warp at the
//! same `activemask` call form its result: the maximal-convergence model). If nothing can
//! complete and threads still wait, the block is either parked at a grid sync (every live
//! thread there) or deadlocked, and the error names the sites.

use core::any::{Any, TypeId};
use core::panic::Location;

use corosensei::stack::DefaultStack;
use corosensei::{Coroutine, CoroutineResult, Yielder};

use crate::Dim3;
use crate::ctx::{self, CTX, Ctx, DROPPING, Resume};
use crate::error::{CpuError, Elsewhere, ThreadAt};
use crate::shared::BlockShared;

/// A panic payload.
pub(crate) type Payload = Box<dyn Any + Send>;

/// A CUDA thread.
pub(crate) type Coro = Coroutine<Resume, Wait, Result<(), Payload>, DefaultStack>;

/// The reduction of a block barrier (`barrier.red`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Red {
    None,
    Popc,
    And,
    Or,
}

/// Shuffle modes of `shfl.sync`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ShflMode {
    /// `shfl.sync.idx`: from lane `b` of the segment.
    Idx,
    /// `shfl.sync.up`: from `b` lanes below.
    Up,
    /// `shfl.sync.down`: from `b` lanes above.
    Down,
    /// `shfl.sync.bfly`: from lane `laneid ^ b`.
    Bfly,
}

/// Operations of `redux.sync`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReduxOp {
    /// Wrapping sum.
    Add,
    /// Minimum.
    Min,
    /// Maximum.
    Max,
    /// Bitwise and.
    And,
    /// Bitwise or.
    Or,
    /// Bitwise xor.
    Xor,
}

/// What a warp collective computes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum WarpOp {
    /// `bar.warp.sync`: lanes may arrive from different call sites.
    Sync,
    /// A shuffle of a value of this type and size.
    Shfl(ShflMode, TypeId, usize),
    VoteAll,
    VoteAny,
    VoteUni,
    Ballot,
    /// `match.any`, 64-bit when `true`.
    MatchAny(bool),
    /// `match.all`, 64-bit when `true`.
    MatchAll(bool),
    /// `redux.sync`, signed when `true`.
    Redux(ReduxOp, bool),
    /// Every lane receives every lane's value of this type and size (the CPU device's way to
    /// run a warp-wide instruction such as `mma.sync` or `ldmatrix`: gather the fragments,
    /// compute, keep this lane's part).
    Gather(TypeId, usize),
}

/// Where a thread waits.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Kind {
    /// A block barrier: `id`, `count` threads (0: the whole block), its reduction and this
    /// thread's predicate.
    Bar { id: u32, count: u32, red: Red, pred: bool },
    /// A warp collective over `mask` with this lane's operands: a word, the shuffle's `b`
    /// and `c`, and for shuffles where its value is and where the result goes.
    Warp { mask: u32, op: WarpOp, word: u64, b: u32, c: u32, src: *const u8, dst: *mut u8 },
    /// `activemask`.
    Active,
    /// A grid sync.
    Grid,
    /// A spin-wait's pause: runnable again in the next round.
    Yield,
}

/// What a thread yields to the scheduler when it blocks.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Wait {
    pub op: &'static str,
    pub site: &'static Location<'static>,
    /// Which call instruction at `site` (see [`crate::at_instruction`]; 0 when unknown).
    pub token: u64,
    pub kind: Kind,
}

impl Wait {
    /// Whether `other` waits at the same call: the same call site and the same instruction.
    pub(crate) fn same_call(&self, other: &Wait) -> bool {
        self.site == other.site && self.token == other.token
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum St {
    /// Runnable, with the value to resume it with.
    Run(Resume),
    Waiting,
    Exited,
}

/// The grid sync a block is parked at: the operation, its call site and instruction.
#[derive(Clone, Copy, Debug)]
pub(crate) struct GridAt {
    pub op: &'static str,
    pub site: &'static Location<'static>,
    pub token: u64,
}

/// How a call to [`BlockRun::run`] ended.
pub(crate) enum Outcome {
    Done,
    /// Every live thread waits at this grid sync.
    Parked(GridAt),
    /// The block can only move through threads that spin ([`crate::yield_now`]): the worker
    /// may run other blocks before calling `run` again.
    Yielded,
}

/// Settings of the launch a block belongs to.
#[derive(Clone, Copy)]
pub(crate) struct BlockCfg<'k> {
    pub kernel: &'k (dyn Fn() + Sync),
    pub bdim: Dim3,
    pub gdim: Dim3,
    pub cooperative: bool,
    /// The launch's clusters, if it has any.
    pub cluster: Option<&'k crate::cluster::ClusterTable>,
    /// The launch's grid split barrier, if it is cooperative.
    pub grid_split: Option<&'k crate::split::GridSplit>,
    pub seed: Option<u64>,
    pub stack: usize,
    pub spin_limit: std::time::Duration,
}

/// A block in flight.
pub(crate) struct BlockRun {
    pub idx: Dim3,
    rank: u64,
    n: u32,
    /// Boxed so that the pointer threads hold stays put; `None` only once recycled.
    shared: Option<Box<BlockShared>>,
    coros: Vec<Option<Coro>>,
    st: Vec<St>,
    waits: Vec<Option<Wait>>,
    seq: Vec<u64>,
    next_seq: u64,
    rng: u64,
    /// Since when the block has moved only through spinning threads.
    spinning: Option<std::time::Instant>,
}

/// The index of rank `r` in a block of extent `d`.
pub(crate) fn tid_of(r: u32, d: Dim3) -> Dim3 {
    Dim3::new(r % d.x, (r / d.x) % d.y, r / (d.x * d.y))
}

fn bits(mut m: u32) -> impl Iterator<Item = u32> {
    core::iter::from_fn(move || {
        (m != 0).then(|| {
            let b = m.trailing_zeros();
            m &= m - 1;
            b
        })
    })
}

/// The source lane of a `shfl.sync` (PTX ISA's definition), or `None` when the lane reads its
/// own value (out of its segment or past the clamp).
fn shfl_src(mode: ShflMode, lane: u32, b: u32, c: u32) -> Option<u32> {
    let bval = b & 31;
    let cval = c & 31;
    let seg = (c >> 8) & 31;
    let max_lane = (lane & seg) | (cval & !seg);
    let min_lane = lane & seg;
    let (j, ok) = match mode {
        ShflMode::Up => {
            let j = lane as i32 - bval as i32;
            (j, j >= max_lane as i32)
        }
        ShflMode::Down => {
            let j = (lane + bval) as i32;
            (j, j <= max_lane as i32)
        }
        ShflMode::Bfly => {
            let j = (lane ^ bval) as i32;
            (j, j <= max_lane as i32)
        }
        ShflMode::Idx => {
            let j = (min_lane | (bval & !seg)) as i32;
            (j, j <= max_lane as i32)
        }
    };
    (ok && j != lane as i32).then_some(j as u32)
}

impl BlockRun {
    /// A block of the launch, with every thread runnable and not yet started.
    pub(crate) fn new(
        cfg: &BlockCfg<'_>,
        rank: u64,
        shared: Box<BlockShared>,
        dyn_len: u32,
        race: bool,
        stacks: &mut Vec<DefaultStack>,
    ) -> Result<Self, CpuError> {
        let n = cfg.bdim.volume() as u32;
        let g = cfg.gdim;
        let idx = Dim3::new(
            (rank % u64::from(g.x)) as u32,
            ((rank / u64::from(g.x)) % u64::from(g.y)) as u32,
            (rank / (u64::from(g.x) * u64::from(g.y))) as u32,
        );
        shared.reset(dyn_len, race.then_some(n as usize), cfg.cluster.is_some());
        let mut coros = Vec::with_capacity(n as usize);
        for _ in 0..n {
            let stack = match stacks.pop() {
                Some(s) => s,
                None => DefaultStack::new(cfg.stack).map_err(|e| CpuError::InvalidLaunch {
                    reason: format!("could not map a {} KiB thread stack: {e}", cfg.stack / 1024),
                })?,
            };
            let kernel = cfg.kernel;
            let body = move |y: &Yielder<Resume, Wait>, _: Resume| -> Result<(), Payload> {
                CTX.with(|c| {
                    let mut x = c.get();
                    x.yielder = y;
                    c.set(x);
                });
                match std::panic::catch_unwind(std::panic::AssertUnwindSafe(kernel)) {
                    Ok(()) => Ok(()),
                    // The scheduler is dropping this suspended thread: let the unwind through.
                    Err(p) if DROPPING.with(|d| d.get()) => std::panic::resume_unwind(p),
                    Err(p) => Err(p),
                }
            };
            // SAFETY: the body borrows only `kernel`, which outlives the launch; every coroutine
            // is driven to completion or dropped before `launch` returns (they live in this
            // `BlockRun`, owned by a worker inside the launch's thread scope, and are never
            // leaked).
            coros.push(Some(unsafe { Coro::with_stack_unchecked(stack, body) }));
        }
        let seed = cfg.seed.map_or(0, |s| s ^ rank.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
        Ok(Self {
            idx,
            rank,
            n,
            shared: Some(shared),
            coros,
            st: vec![St::Run(0); n as usize],
            waits: vec![None; n as usize],
            seq: vec![0; n as usize],
            next_seq: 0,
            rng: seed,
            spinning: None,
        })
    }

    fn at(&self, cfg: &BlockCfg<'_>, t: u32) -> ThreadAt {
        let w = self.waits[t as usize].expect("a waiting thread");
        ThreadAt { thread: tid_of(t, cfg.bdim), op: w.op, site: w.site, instruction: w.token }
    }

    /// The block's linear rank in the grid.
    pub(crate) fn rank(&self) -> u64 {
        self.rank
    }

    /// Releases the threads parked at a grid sync.
    pub(crate) fn release_grid(&mut self) {
        for t in 0..self.n as usize {
            if matches!(self.waits[t], Some(Wait { kind: Kind::Grid, .. })) {
                self.waits[t] = None;
                self.st[t] = St::Run(0);
            }
        }
        if let Some(race) = self.sh().race.borrow_mut().as_mut() {
            let all: Vec<u32> = (0..self.n).filter(|&t| self.st[t as usize] != St::Exited).collect();
            race.sync(&all);
        }
    }

    /// Gives the stacks of finished threads back for reuse.
    pub(crate) fn recycle(mut self, stacks: &mut Vec<DefaultStack>) -> Box<BlockShared> {
        for c in self.coros.iter_mut() {
            if let Some(c) = c.take() {
                if c.done() {
                    stacks.push(c.into_stack());
                } else {
                    drop_coro(c);
                }
            }
        }
        self.shared.take().expect("a block's shared memory")
    }

    fn sh(&self) -> &BlockShared {
        self.shared.as_deref().expect("a block's shared memory")
    }

    fn order(&mut self) -> Vec<u32> {
        let mut v: Vec<u32> = (0..self.n).filter(|&t| matches!(self.st[t as usize], St::Run(_))).collect();
        if self.rng != 0 {
            for i in (1..v.len()).rev() {
                self.rng ^= self.rng << 13;
                self.rng ^= self.rng >> 7;
                self.rng ^= self.rng << 17;
                v.swap(i, (self.rng % (i as u64 + 1)) as usize);
            }
        }
        v
    }

    /// Runs the block until every thread exited or every live thread waits at a grid sync.
    pub(crate) fn run(&mut self, cfg: &BlockCfg<'_>) -> Result<Outcome, CpuError> {
        loop {
            for t in self.order() {
                let St::Run(input) = self.st[t as usize] else { continue };
                let coro = self.coros[t as usize].as_mut().expect("a live thread has its coroutine");
                if !coro.started() {
                    let shared: *const BlockShared = self.shared.as_deref().expect("a block's shared memory");
                    CTX.with(|c| {
                        c.set(Ctx {
                            active: true,
                            bid: self.idx,
                            bdim: cfg.bdim,
                            gdim: cfg.gdim,
                            rank: t,
                            grid_base: self.rank * u64::from(self.n),
                            cooperative: cfg.cooperative,
                            yielder: core::ptr::null(),
                            block: shared,
                            cluster: cfg.cluster.map_or(core::ptr::null(), |t| t as *const _),
                            cluster_phase: crate::cluster::NO_PHASE,
                            split: 0,
                            grid_split: cfg.grid_split.map_or(core::ptr::null(), |g| g as *const _),
                        })
                    });
                }
                let r = coro.resume(input);
                match r {
                    CoroutineResult::Yield(w) => {
                        self.st[t as usize] = St::Waiting;
                        self.waits[t as usize] = Some(w);
                        self.seq[t as usize] = self.next_seq;
                        self.next_seq += 1;
                    }
                    CoroutineResult::Return(Ok(())) => {
                        self.st[t as usize] = St::Exited;
                        self.spinning = None;
                    }
                    CoroutineResult::Return(Err(p)) => {
                        let e = panic_error(p, self.idx, tid_of(t, cfg.bdim));
                        CTX.with(|c| c.set(Ctx::NONE));
                        return Err(e);
                    }
                }
            }
            CTX.with(|c| c.set(Ctx::NONE));
            let mut spinner = None;
            for t in 0..self.n as usize {
                if let (St::Waiting, Some(Wait { kind: Kind::Yield, site, .. })) = (self.st[t], self.waits[t]) {
                    spinner.get_or_insert((t as u32, site));
                    self.waits[t] = None;
                    self.st[t] = St::Run(0);
                }
            }
            if self.resolve(cfg)? || self.resolve_active() {
                self.spinning = None;
                continue;
            }
            if let Some((t, site)) = spinner {
                let since = *self.spinning.get_or_insert_with(std::time::Instant::now);
                if since.elapsed() > cfg.spin_limit {
                    return Err(CpuError::SpinTimeout {
                        block: self.idx,
                        thread: tid_of(t, cfg.bdim),
                        site,
                        millis: cfg.spin_limit.as_millis() as u64,
                    });
                }
                return Ok(Outcome::Yielded);
            }
            self.spinning = None;
            if self.st.iter().all(|s| *s == St::Exited) {
                return Ok(Outcome::Done);
            }
            return self.stuck(cfg);
        }
    }

    /// Completes every warp collective and barrier that can complete; whether any did.
    fn resolve(&mut self, cfg: &BlockCfg<'_>) -> Result<bool, CpuError> {
        let mut progress = false;
        let n = self.n;
        // Warp collectives.
        for base in (0..n).step_by(32) {
            let k = (n - base).min(32);
            let exist = if k == 32 { u32::MAX } else { (1u32 << k) - 1 };
            let mut done = 0u32;
            for l in 0..k {
                let t = base + l;
                if done & (1 << l) != 0 || self.st[t as usize] != St::Waiting {
                    continue;
                }
                let Some(w) = self.waits[t as usize] else { continue };
                let Kind::Warp { mask, op, .. } = w.kind else { continue };
                let misuse = |reason: String| CpuError::Misuse {
                    block: self.idx,
                    thread: tid_of(t, cfg.bdim),
                    op: w.op,
                    site: w.site,
                    reason,
                };
                if mask & (1 << l) == 0 {
                    return Err(misuse(format!("the calling lane {l} is not in the mask {mask:#010x}")));
                }
                if mask & !exist != 0 {
                    return Err(misuse(format!(
                        "the mask {mask:#010x} names lanes {:#010x} that this warp does not have (the block has {n} \
                         threads)",
                        mask & !exist
                    )));
                }
                let mut all = true;
                for j in bits(mask) {
                    let tj = (base + j) as usize;
                    match (self.st[tj], self.waits[tj]) {
                        (St::Waiting, Some(w2 @ Wait { kind: Kind::Warp { mask: m2, op: op2, .. }, .. }))
                            if (op == WarpOp::Sync && op2 == WarpOp::Sync) || (w.same_call(&w2) && op2 == op) =>
                        {
                            if m2 != mask {
                                return Err(misuse(format!(
                                    "lane {l} passes the mask {mask:#010x} and lane {j} the mask {m2:#010x} (every \
                                     lane must pass the same mask)"
                                )));
                            }
                        }
                        (St::Waiting, Some(w2 @ Wait { kind: Kind::Warp { op: WarpOp::Shfl(..), .. }, .. }))
                            if w.same_call(&w2) && matches!(op, WarpOp::Shfl(..)) =>
                        {
                            return Err(misuse(format!(
                                "lanes {l} and {j} shuffle values of different types or modes at this call"
                            )));
                        }
                        _ => all = false,
                    }
                }
                if all {
                    self.complete_warp(cfg, base, mask, op)?;
                    done |= mask;
                    progress = true;
                }
            }
        }
        // Block and named barriers.
        let mut whole: Vec<u32> = Vec::new();
        let mut named: [Vec<u32>; 16] = Default::default();
        for t in 0..n {
            if self.st[t as usize] != St::Waiting {
                continue;
            }
            if let Some(Wait { kind: Kind::Bar { id, count, .. }, .. }) = self.waits[t as usize] {
                if count == 0 {
                    whole.push(t);
                } else {
                    named[id as usize & 15].push(t);
                }
            }
        }
        if whole.len() == n as usize {
            let w0 = self.waits[0].expect("waiting");
            let red = match w0.kind {
                Kind::Bar { red, .. } => red,
                _ => Red::None,
            };
            let same = whole.iter().all(|&t| {
                let w = self.waits[t as usize].expect("waiting");
                w.same_call(&w0) && matches!(w.kind, Kind::Bar { red: r, .. } if r == red)
            });
            if same {
                self.complete_bar(&whole, red);
                progress = true;
            }
        }
        for (id, group) in named.iter_mut().enumerate() {
            if group.is_empty() {
                continue;
            }
            group.sort_by_key(|&t| self.seq[t as usize]);
            let Some(Wait { kind: Kind::Bar { count, red, .. }, site, op, .. }) = self.waits[group[0] as usize] else {
                continue;
            };
            if let Some(&t) = group.iter().find(|&&t| {
                !matches!(self.waits[t as usize], Some(Wait { kind: Kind::Bar { count: c2, .. }, .. }) if c2 == count)
            }) {
                return Err(CpuError::Misuse {
                    block: self.idx,
                    thread: tid_of(t, cfg.bdim),
                    op,
                    site,
                    reason: format!("threads wait at named barrier {id} with different thread counts"),
                });
            }
            if count > n {
                return Err(CpuError::Misuse {
                    block: self.idx,
                    thread: tid_of(group[0], cfg.bdim),
                    op,
                    site,
                    reason: format!("named barrier {id} waits for {count} threads and the block has {n}"),
                });
            }
            if group.len() >= count as usize {
                let members: Vec<u32> = group[..count as usize].to_vec();
                self.complete_bar(&members, red);
                progress = true;
            }
        }
        Ok(progress)
    }

    fn complete_bar(&mut self, members: &[u32], red: Red) {
        let preds = members
            .iter()
            .filter(|&&t| matches!(self.waits[t as usize], Some(Wait { kind: Kind::Bar { pred: true, .. }, .. })));
        let count = preds.count() as u64;
        let out = match red {
            Red::None => 0,
            Red::Popc => count,
            Red::And => u64::from(count == members.len() as u64),
            Red::Or => u64::from(count > 0),
        };
        for &t in members {
            self.waits[t as usize] = None;
            self.st[t as usize] = St::Run(out);
        }
        if let Some(race) = self.sh().race.borrow_mut().as_mut() {
            race.sync(members);
        }
    }

    fn complete_warp(&mut self, cfg: &BlockCfg<'_>, base: u32, mask: u32, op: WarpOp) -> Result<(), CpuError> {
        let word = |s: &Self, j: u32| match s.waits[(base + j) as usize] {
            Some(Wait { kind: Kind::Warp { word, .. }, .. }) => word,
            _ => unreachable!("every lane of the group waits at the collective"),
        };
        let mut outs = [0u64; 32];
        match op {
            WarpOp::Sync => {
                if let Some(race) = self.sh().race.borrow_mut().as_mut() {
                    let members: Vec<u32> = bits(mask).map(|j| base + j).collect();
                    race.sync(&members);
                }
            }
            WarpOp::Shfl(mode, _, size) => {
                for l in bits(mask) {
                    let Some(Wait { kind: Kind::Warp { b, c, dst, src, .. }, site, op: name, .. }) =
                        self.waits[(base + l) as usize]
                    else {
                        unreachable!()
                    };
                    let from = match shfl_src(mode, l, b, c) {
                        None => src,
                        Some(j) if mask & (1 << j) != 0 => match self.waits[(base + j) as usize] {
                            Some(Wait { kind: Kind::Warp { src, .. }, .. }) => src,
                            _ => unreachable!(),
                        },
                        Some(j) => {
                            return Err(CpuError::Misuse {
                                block: self.idx,
                                thread: tid_of(base + l, cfg.bdim),
                                op: name,
                                site,
                                reason: format!(
                                    "lane {l} reads lane {j}, which is not in the mask {mask:#010x} (undefined on a GPU)"
                                ),
                            });
                        }
                    };
                    // SAFETY: every lane of the group is suspended inside `ops::shfl::<T>` with
                    // the same `T` (the op carries its `TypeId` and size and the group matched
                    // on it): `src` points to that frame's `T` value and `dst` to its
                    // `MaybeUninit<T>` result, both alive until the lane is resumed; distinct
                    // lanes have distinct frames, so `dst` does not overlap any `src` or other
                    // `dst`.
                    unsafe { core::ptr::copy_nonoverlapping(from, dst, size) };
                }
            }
            WarpOp::Gather(_, size) => {
                for l in bits(mask) {
                    let Some(Wait { kind: Kind::Warp { dst, .. }, .. }) = self.waits[(base + l) as usize] else {
                        unreachable!()
                    };
                    for j in bits(mask) {
                        let Some(Wait { kind: Kind::Warp { src, .. }, .. }) = self.waits[(base + j) as usize] else {
                            unreachable!()
                        };
                        // SAFETY: every lane of the group is suspended inside
                        // `ops::warp_gather::<T>` with the same `T` (the op carries its
                        // `TypeId` and size, and the group matched on it): `src` points to that
                        // frame's `T` and `dst` to its `[T; 32]` result, both alive until the
                        // lane is resumed; slot `j` of `dst` is `size` bytes at `j * size`;
                        // distinct lanes have distinct frames, so no `dst` overlaps a `src`.
                        unsafe { core::ptr::copy_nonoverlapping(src, dst.add(j as usize * size), size) };
                    }
                }
            }
            WarpOp::VoteAll | WarpOp::VoteAny | WarpOp::VoteUni | WarpOp::Ballot => {
                let set: u32 = bits(mask).filter(|&j| word(self, j) != 0).fold(0, |a, j| a | 1 << j);
                let v = match op {
                    WarpOp::VoteAll => u64::from(set == mask),
                    WarpOp::VoteAny => u64::from(set != 0),
                    WarpOp::VoteUni => u64::from(set == mask || set == 0),
                    _ => u64::from(set),
                };
                outs = [v; 32];
            }
            WarpOp::MatchAny(_) | WarpOp::MatchAll(_) => {
                for l in bits(mask) {
                    let me = word(self, l);
                    let same: u32 = bits(mask).filter(|&j| word(self, j) == me).fold(0, |a, j| a | 1 << j);
                    outs[l as usize] = match op {
                        WarpOp::MatchAny(_) => u64::from(same),
                        _ if same == mask => u64::from(mask) | 1 << 32,
                        _ => 0,
                    };
                }
            }
            WarpOp::Redux(r, signed) => {
                let vals = bits(mask).map(|j| word(self, j) as u32);
                let v = match (r, signed) {
                    (ReduxOp::Add, _) => vals.fold(0u32, u32::wrapping_add),
                    (ReduxOp::Min, false) => vals.fold(u32::MAX, u32::min),
                    (ReduxOp::Max, false) => vals.fold(0, u32::max),
                    (ReduxOp::Min, true) => vals.map(|v| v as i32).fold(i32::MAX, i32::min) as u32,
                    (ReduxOp::Max, true) => vals.map(|v| v as i32).fold(i32::MIN, i32::max) as u32,
                    (ReduxOp::And, _) => vals.fold(u32::MAX, |a, v| a & v),
                    (ReduxOp::Or, _) => vals.fold(0, |a, v| a | v),
                    (ReduxOp::Xor, _) => vals.fold(0, |a, v| a ^ v),
                };
                outs = [u64::from(v); 32];
            }
        }
        for l in bits(mask) {
            self.waits[(base + l) as usize] = None;
            self.st[(base + l) as usize] = St::Run(outs[l as usize]);
        }
        Ok(())
    }

    /// Completes the `activemask` calls: per warp, the lanes at one call site form the mask.
    fn resolve_active(&mut self) -> bool {
        let mut progress = false;
        for base in (0..self.n).step_by(32) {
            let k = (self.n - base).min(32);
            let mut left: u32 = (0..k)
                .filter(|&l| matches!(self.waits[(base + l) as usize], Some(Wait { kind: Kind::Active, .. })))
                .fold(0, |a, l| a | 1 << l);
            while left != 0 {
                let first = left.trailing_zeros();
                let w0 = self.waits[(base + first) as usize].expect("waiting");
                let group = bits(left)
                    .filter(|&l| self.waits[(base + l) as usize].expect("waiting").same_call(&w0))
                    .fold(0u32, |a, l| a | 1 << l);
                for l in bits(group) {
                    self.waits[(base + l) as usize] = None;
                    self.st[(base + l) as usize] = St::Run(u64::from(group));
                }
                left &= !group;
                progress = true;
            }
        }
        progress
    }

    /// Nothing can complete: either every live thread is at a grid sync, or the block is stuck.
    fn stuck(&self, cfg: &BlockCfg<'_>) -> Result<Outcome, CpuError> {
        let n = self.n;
        let waiting: Vec<u32> = (0..n).filter(|&t| self.st[t as usize] == St::Waiting).collect();
        let exited = (0..n).find(|&t| self.st[t as usize] == St::Exited);
        // A warp collective that can't complete: name a missing lane.
        for &t in &waiting {
            let w = self.waits[t as usize].expect("waiting");
            let Kind::Warp { mask, op, .. } = w.kind else { continue };
            let base = t & !31;
            let at_same = |j: u32| {
                let tj = (base + j) as usize;
                self.st[tj] == St::Waiting
                    && matches!(self.waits[tj], Some(w2 @ Wait { kind: Kind::Warp { op: o2, .. }, .. })
                        if o2 == op && (op == WarpOp::Sync || w.same_call(&w2)))
            };
            let arrived = bits(mask).filter(|&j| at_same(j)).fold(0u32, |a, j| a | 1 << j);
            let Some(lane) = bits(mask).find(|&j| !at_same(j)) else { continue };
            let tl = (base + lane) as usize;
            let elsewhere = match (self.st[tl], self.waits[tl]) {
                // The same source location and another instruction: a second call inside one
                // macro expansion or `#[track_caller]` helper.
                (St::Waiting, Some(w2)) if w2.site == w.site && w2.token != w.token => {
                    Elsewhere::SameSite { op: w2.op }
                }
                (St::Waiting, Some(w2)) => Elsewhere::At { op: w2.op, site: w2.site },
                _ => Elsewhere::Exited,
            };
            return Err(CpuError::WarpDivergence {
                block: self.idx,
                warp: t / 32,
                op: w.op,
                site: w.site,
                mask,
                arrived,
                lane,
                elsewhere,
            });
        }
        let first = waiting[0];
        let w0 = self.waits[first as usize].expect("waiting");
        // Every live thread at one grid sync: park.
        let all_grid_here = waiting.iter().all(|&t| {
            let w = self.waits[t as usize].expect("waiting");
            matches!(w.kind, Kind::Grid) && w.same_call(&w0)
        });
        if all_grid_here {
            return match exited {
                None => Ok(Outcome::Parked(GridAt { op: w0.op, site: w0.site, token: w0.token })),
                Some(e) => Err(CpuError::ExitedAtBarrier {
                    block: self.idx,
                    waiting: self.at(cfg, first),
                    exited: tid_of(e, cfg.bdim),
                }),
            };
        }
        // Threads at different places.
        let same_place = |a: &Wait, b: &Wait| {
            a.same_call(b)
                && match (a.kind, b.kind) {
                    (Kind::Bar { id, count, .. }, Kind::Bar { id: i2, count: c2, .. }) => id == i2 && count == c2,
                    (Kind::Grid, Kind::Grid) => true,
                    _ => false,
                }
        };
        if let Some(&other) = waiting.iter().find(|&&t| !same_place(&w0, &self.waits[t as usize].expect("waiting"))) {
            // A named barrier short of threads while others sit elsewhere: report the barrier.
            return Err(CpuError::BarrierMismatch {
                block: self.idx,
                first: self.at(cfg, first),
                second: self.at(cfg, other),
            });
        }
        match w0.kind {
            Kind::Bar { id, count, .. } if count != 0 => Err(CpuError::NamedBarrierStuck {
                block: self.idx,
                id,
                count,
                arrived: waiting.len() as u32,
                waiting: self.at(cfg, first),
            }),
            _ => Err(CpuError::ExitedAtBarrier {
                block: self.idx,
                waiting: self.at(cfg, first),
                exited: tid_of(exited.unwrap_or(0), cfg.bdim),
            }),
        }
    }
}

impl Drop for BlockRun {
    fn drop(&mut self) {
        for c in self.coros.iter_mut() {
            if let Some(c) = c.take() {
                drop_coro(c);
            }
        }
    }
}

/// Drops a coroutine, unwinding its stack if it is suspended.
fn drop_coro(c: Coro) {
    DROPPING.with(|d| d.set(true));
    drop(c);
    DROPPING.with(|d| d.set(false));
    CTX.with(|x| x.set(Ctx::NONE));
}

/// The error for a thread that ended with panic payload `p`.
pub(crate) fn panic_error(p: Payload, block: Dim3, thread: Dim3) -> CpuError {
    match p.downcast::<CpuError>() {
        Ok(e) => *e,
        Err(p) => {
            let (location, message) = ctx::LAST_PANIC.with(|l| l.borrow_mut().take()).unwrap_or_else(|| {
                let msg = p
                    .downcast_ref::<&str>()
                    .map(|s| (*s).to_owned())
                    .or_else(|| p.downcast_ref::<String>().cloned())
                    .unwrap_or_else(|| "Box<dyn Any>".into());
                (None, msg)
            });
            CpuError::Panic { block, thread, location, message }
        }
    }
}
