//! Thread-block clusters (sm_90) on the CPU device: the cluster registers, the cluster barrier
//! (`barrier.cluster.arrive` / `wait`) and distributed shared memory (`mapa`: another block's
//! shared window).
//!
//! A launch with a cluster shape ([`LaunchSpec::cluster`](crate::LaunchSpec::cluster)) gets a
//! [`ClusterTable`]: every block's shared window (registered when the block starts, cleared when
//! its last thread has exited) and one barrier per cluster. Clusters of more than one block run
//! with every block resident at once (as a cooperative launch), so the blocks of a cluster run
//! concurrently, as a GPU co-schedules them.
//!
//! The barrier is the hardware's: a phase completes when every thread of the cluster that has
//! not exited has arrived; each thread arrives once per phase and waits (or not) for the phase
//! it arrived in. A wait spins with [`yield_now`](crate::yield_now), so a barrier nothing can
//! complete ends the launch with [`CpuError::SpinTimeout`](crate::CpuError::SpinTimeout), never
//! a hang; a second arrival before the wait, a wait with no arrival, a remote access to a block
//! that has not started or has exited, are [`CpuError::Misuse`](crate::CpuError::Misuse).
//!
//! A launch without a cluster shape (a kernel that is not a cluster kernel) makes every block a
//! cluster of one: the registers say so, the only remote block is the block itself, and the
//! barrier is the block's barrier (`sync_threads`, whose checks apply).

use core::panic::Location;
use std::sync::Mutex;
use std::sync::atomic::{AtomicPtr, Ordering};

use crate::Dim3;
use crate::ctx::{CTX, current, misuse};

/// No pending arrival (the thread's `cluster_phase`).
pub(crate) const NO_PHASE: u64 = u64::MAX;

/// One cluster's barrier.
#[derive(Default)]
struct Bar {
    /// Threads arrived in the current phase.
    arrived: u64,
    /// Threads of the cluster that have not exited.
    live: u64,
    /// The current phase.
    generation: u64,
}

/// The clusters of a launch.
pub(crate) struct ClusterTable {
    dims: Dim3,
    grid: Dim3,
    /// Each block's shared window (null: not started, or exited), by linear block rank.
    windows: Vec<AtomicPtr<u8>>,
    /// Each block's state: 0 not started, 1 running, 2 exited.
    states: Vec<std::sync::atomic::AtomicU8>,
    bars: Vec<Mutex<Bar>>,
    /// The launch's static shared variables: `(key, offset)` and the next free offset. Every
    /// block has each at the same offset (as a GPU's `.shared` variables), so that `mapa` of
    /// one block's address is the same variable in another block.
    statics: Mutex<(Vec<(crate::shared::StaticKey, u32)>, u32)>,
}

impl ClusterTable {
    /// The table of a launch of `grid` blocks of `block_threads` threads in clusters of `dims`
    /// (which divide the grid: checked by `validate`).
    pub(crate) fn new(grid: Dim3, dims: Dim3, block_threads: u64) -> Self {
        let blocks = grid.volume() as usize;
        let clusters = blocks / dims.volume().max(1) as usize;
        let live = block_threads * dims.volume();
        Self {
            dims,
            grid,
            windows: (0..blocks).map(|_| AtomicPtr::new(core::ptr::null_mut())).collect(),
            states: (0..blocks).map(|_| std::sync::atomic::AtomicU8::new(0)).collect(),
            bars: (0..clusters).map(|_| Mutex::new(Bar { live, ..Bar::default() })).collect(),
            statics: Mutex::new((Vec::new(), 0)),
        }
    }

    /// The offset of static `key` (size, alignment) in every block's window, after `dyn_len`
    /// bytes of dynamic shared memory; `None` when it does not fit.
    pub(crate) fn place_static(&self, key: crate::shared::StaticKey, dyn_len: u32) -> Option<u32> {
        let mut s = self.statics.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(&(_, off)) = s.0.iter().find(|(k, _)| *k == key) {
            return Some(off);
        }
        let (_, size, align) = key;
        let next = (s.1 as usize).max(dyn_len.next_multiple_of(16) as usize);
        let off = next.checked_next_multiple_of(align)?;
        let end = off.checked_add(size)?;
        if end > crate::SHARED_CAPACITY {
            return None;
        }
        s.1 = end as u32;
        s.0.push((key, off as u32));
        Some(off as u32)
    }

    /// Block `rank` starts, with its shared window at `base`.
    pub(crate) fn start(&self, rank: u64, base: *mut u8) {
        self.windows[rank as usize].store(base, Ordering::Release);
        self.states[rank as usize].store(1, Ordering::Release);
    }

    /// Block `rank` has finished (every thread exited): its window is gone.
    pub(crate) fn finish(&self, rank: u64) {
        self.windows[rank as usize].store(core::ptr::null_mut(), Ordering::Release);
        self.states[rank as usize].store(2, Ordering::Release);
    }

    /// The linear rank of the cluster block `bid` is in.
    fn cluster_of(&self, bid: Dim3) -> usize {
        let d = self.dims;
        let (cx, cy) = (self.grid.x / d.x, self.grid.y / d.y);
        let c = Dim3::new(bid.x / d.x, bid.y / d.y, bid.z / d.z);
        (c.x + cx * (c.y + cy * c.z)) as usize
    }

    fn bar(&self, bid: Dim3) -> std::sync::MutexGuard<'_, Bar> {
        self.bars[self.cluster_of(bid)].lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// The running launch's cluster table, if it has clusters.
fn table() -> Option<&'static ClusterTable> {
    let c = current();
    // SAFETY: the engine points `cluster` at the launch's table, which lives (on the launching
    // thread's stack) until every thread of the launch has finished; the reference does not
    // escape the device operation that takes it.
    (!c.cluster.is_null()).then(|| unsafe { &*c.cluster })
}

/// `%cluster_nctaid`: the cluster's extent in blocks (`(1,1,1)` in a launch without clusters).
#[must_use]
#[track_caller]
pub fn cluster_dim() -> Dim3 {
    table().map_or(Dim3::ONE, |t| t.dims)
}

/// `%cluster_ctaid`: this block's index in its cluster.
#[must_use]
#[track_caller]
pub fn cluster_block_idx() -> Dim3 {
    let b = current().bid;
    let d = cluster_dim();
    Dim3::new(b.x % d.x, b.y % d.y, b.z % d.z)
}

/// `%cluster_ctarank`: this block's rank in its cluster (x fastest).
#[must_use]
#[track_caller]
pub fn cluster_rank() -> u32 {
    let (i, d) = (cluster_block_idx(), cluster_dim());
    i.x + d.x * (i.y + d.y * i.z)
}

/// `%clusterid`: this block's cluster's index in the grid of clusters.
#[must_use]
#[track_caller]
pub fn cluster_idx() -> Dim3 {
    let b = current().bid;
    let d = cluster_dim();
    Dim3::new(b.x / d.x, b.y / d.y, b.z / d.z)
}

/// `%nclusterid`: the grid's extent in clusters.
#[must_use]
#[track_caller]
pub fn cluster_grid_dim() -> Dim3 {
    let g = current().gdim;
    let d = cluster_dim();
    Dim3::new(g.x / d.x, g.y / d.y, g.z / d.z)
}

/// `barrier.cluster.arrive`: this thread arrives at its cluster's barrier. In a launch without
/// clusters, nothing (the wait is the block's barrier).
#[track_caller]
pub fn cluster_arrive() {
    let site = Location::caller();
    let Some(t) = table() else {
        set_phase(if current().cluster_phase == NO_PHASE { 0 } else { arrived_twice(site) });
        return;
    };
    if current().cluster_phase != NO_PHASE {
        arrived_twice(site);
    }
    let bid = current().bid;
    let mut b = t.bar(bid);
    let g = b.generation;
    b.arrived += 1;
    if b.arrived >= b.live {
        b.arrived = 0;
        b.generation += 1;
    }
    drop(b);
    set_phase(g);
}

/// `barrier.cluster.wait`: waits until the phase this thread arrived in completes (every thread
/// of the cluster that has not exited arrived). In a launch without clusters, the block's
/// barrier.
#[track_caller]
pub fn cluster_wait() {
    let site = Location::caller();
    let g = current().cluster_phase;
    if g == NO_PHASE {
        misuse(
            "barrier.cluster.wait",
            site,
            "a cluster barrier wait with no arrival before it (barrier.cluster.wait needs barrier.cluster.arrive)"
                .into(),
        );
    }
    let Some(t) = table() else {
        set_phase(NO_PHASE);
        crate::ops::sync_threads();
        return;
    };
    let bid = current().bid;
    while t.bar(bid).generation == g {
        crate::ops::yield_now();
    }
    set_phase(NO_PHASE);
}

/// The running thread is about to exit: it no longer holds up its cluster's barrier (as an
/// exiting thread releases `barrier.cluster` on a GPU). Called once per thread, by the cluster
/// kernels' entry, last; then the thread must make no other cluster operation.
#[track_caller]
pub fn cluster_thread_exit() {
    let Some(t) = table() else { return };
    let bid = current().bid;
    let mut b = t.bar(bid);
    b.live -= 1;
    if b.arrived > 0 && b.arrived >= b.live {
        b.arrived = 0;
        b.generation += 1;
    }
}

/// `mapa`: the host address of this block's shared-window address `addr` (of `size` bytes) in
/// the window of the block of rank `rank` in this block's cluster. A rank outside the cluster,
/// a block that has not started or has exited, end the launch with a misuse.
#[must_use]
#[track_caller]
pub fn cluster_map_shared(addr: u32, size: u32, rank: u32) -> *mut u8 {
    let site = Location::caller();
    let c = current();
    let d = cluster_dim();
    if u64::from(rank) >= d.volume() {
        misuse("mapa", site, format!("cluster rank {rank} in a cluster of {} blocks", d.volume()));
    }
    if u64::from(addr) + u64::from(size) > crate::SHARED_CAPACITY as u64 {
        misuse("mapa", site, format!("shared address {addr:#x} (+{size} B) is outside the shared window"));
    }
    let Some(t) = table() else {
        // A cluster of one: the block itself.
        return crate::shared_window().wrapping_add(addr as usize);
    };
    let local = Dim3::new(rank % d.x, (rank / d.x) % d.y, rank / (d.x * d.y));
    let me = cluster_block_idx();
    let peer = Dim3::new(c.bid.x - me.x + local.x, c.bid.y - me.y + local.y, c.bid.z - me.z + local.z);
    let g = c.gdim;
    let linear = peer.x as usize + g.x as usize * (peer.y as usize + g.y as usize * peer.z as usize);
    let base = t.windows[linear].load(Ordering::Acquire);
    if base.is_null() {
        let state = t.states[linear].load(Ordering::Acquire);
        let why = if state == 2 {
            "it has exited (its shared memory is freed): a remote access after its owner left"
        } else {
            "it has not started (no cluster barrier since the kernel began)"
        };
        misuse("mapa", site, format!("shared memory of block {peer} (cluster rank {rank}) accessed, but {why}"));
    }
    base.wrapping_add(addr as usize)
}

fn set_phase(g: u64) {
    CTX.with(|x| {
        let mut c = x.get();
        c.cluster_phase = g;
        x.set(c);
    });
}

#[cold]
fn arrived_twice(site: &'static Location<'static>) -> ! {
    misuse(
        "barrier.cluster.arrive",
        site,
        "a second cluster barrier arrival before waiting for the first (each arrive needs its wait)".into(),
    )
}
