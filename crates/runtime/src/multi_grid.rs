//! Multi-grid cooperative launches: see [`MultiGrid`].

use std::ffi::c_void;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use cohort::DeviceCopy;
use cohort::cg::{MULTI_GRID_MAX, MultiGridWords};

use crate::backend::{HostAlloc, LaunchMode};
use crate::device::Gpu;
use crate::error::{Error, Result};
use crate::launch::LaunchConfig;
use crate::memory::DeviceBuffer;
use crate::module::{Function, Launch};
use crate::stream::{Captured, Stream};
use crate::track::{Mark, Use, gates_outside_capture, run_tracked_multi};

/// Bytes of one barrier block (a [`MultiGridWords`], rounded up to a multiple of 128).
const BLOCK_BYTES: usize = size_of::<MultiGridWords>().div_ceil(128) * 128;
/// Bytes of one host allocation of blocks.
const PAGE_BYTES: usize = 4096;
const BLOCKS_PER_PAGE: usize = PAGE_BYTES / BLOCK_BYTES;

/// The default time a grid waits at a multi-grid sync for the others.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);

/// The marks of the last multi-grid launch of the process: the next one waits for them. Weak:
/// the launch's `MultiGrid` holds them (in its pool) while they matter, and waits for them when
/// dropped; a strong reference here would keep the GPUs' contexts (and their peer-access
/// records) alive for the rest of the process.
static LAST_LAUNCH: Mutex<Vec<Weak<Mark>>> = Mutex::new(Vec::new());

/// A group of GPUs that run multi-grid kernels together (`#[kernel(multi_grid)]`), with the
/// host-mapped memory their barriers use. Grid rank `r` runs on `gpus()[r]`.
///
/// Multi-grid cooperative launches: one cooperative grid per GPU, all running at once, which
/// synchronize across GPUs with [`MultiGridGroup::sync`](cohort::cg::MultiGridGroup::sync) —
/// what CUDA 13 removed (`cudaLaunchCooperativeKernelMultiDevice`, `this_multi_grid()`).
///
/// ```no_run
/// # use cohort_runtime::{Gpu, LaunchConfig, MultiGrid, DeviceBuffer};
/// # mod kernels { pub struct step; impl step {
/// #   pub fn load(_: &cohort_runtime::Module) -> Result<Self, cohort_runtime::Error> { unimplemented!() }
/// #   pub fn add_to<'g>(&'g self, _: &mut cohort_runtime::MultiGridLaunch<'g>, _: &cohort_runtime::Stream,
/// #       _: &mut cohort_runtime::DeviceBuffer<f32>) -> Result<(), cohort_runtime::Error> { unimplemented!() } } }
/// # fn ptx() -> &'static cohort_runtime::PtxSet { unimplemented!() }
/// # fn main() -> Result<(), cohort_runtime::Error> {
/// let gpus = Gpu::all()?;
/// let group = MultiGrid::new(&gpus)?;
/// let kernels = gpus.iter().map(|g| kernels::step::load(&g.load(ptx())?)).collect::<Result<Vec<_>, _>>()?;
/// let mut outs = gpus.iter().map(|g| DeviceBuffer::<f32>::zeroed(g, 1 << 20)).collect::<Result<Vec<_>, _>>()?;
/// let mut launch = group.launch(LaunchConfig::new(132, 256));
/// for ((k, g), out) in kernels.iter().zip(&gpus).zip(&mut outs) {
///     k.add_to(&mut launch, g.stream(), out)?; // one grid per GPU, typed arguments
/// }
/// launch.submit()?; // all grids or none
/// # Ok(()) }
/// ```
///
/// # What the launcher guarantees
///
/// - **Every grid of the group or none** is enqueued: `add_to` only collects a grid; `submit`
///   checks all of them first (one per GPU of the group, one kernel, one configuration, each
///   grid co-resident on its GPU, arguments of the grid's GPU or peers it may read, no memory
///   written by one grid and used by another), then enqueues. If the driver refuses a later
///   grid after earlier ones were enqueued, the host sets the launch's abort word and the
///   enqueued grids end at their next multi-grid sync with an `Err` instead of waiting forever.
/// - **All grids run at once**: before the grids, each stream of the launch waits for the
///   others' earlier work (so no grid spins while another GPU still works toward something its
///   own grid occupies), and for the previous multi-grid launch of the process (two multi-grid
///   launches on the same GPUs never hold half the GPUs each).
/// - **A barrier block per launch**: each launch gets its own block of host-mapped memory
///   (from a pool; a block is reused only after every grid that used it has finished), so two
///   launches in flight never share arrival flags.
/// - **No hang**: a grid that does not arrive at a sync within [`MultiGrid::with_timeout`]
///   (10 s by default) ends the waiting grids with an `Err` naming the sync's call site: a
///   grid that skipped a sync, exited early or trapped.
///
/// Cost: a multi-grid sync is two grid syncs plus one round trip of arrival flags through host
/// memory (`cohort bench multi-grid` measures it beside the C++ twin of NVIDIA's pattern).
pub struct MultiGrid {
    gpus: Vec<Gpu>,
    timeout_ms: u32,
    pool: Mutex<Pool>,
}

impl std::fmt::Debug for MultiGrid {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let ordinals: Vec<usize> = self.gpus.iter().map(|g| g.info().ordinal).collect();
        f.debug_struct("MultiGrid").field("gpus", &ordinals).field("timeout_ms", &self.timeout_ms).finish()
    }
}

struct Page {
    host: *mut u8,
    /// The device address of the page in each GPU's context (by rank).
    device: Vec<u64>,
}

struct Block {
    page: usize,
    offset: usize,
    /// The grids that used the block last: it is free when all have finished.
    busy: Vec<Arc<Mark>>,
}

struct Pool {
    pages: Vec<Page>,
    blocks: Vec<Block>,
}

// SAFETY: the raw host pointers are of pinned allocations owned by the pool, used only under its
// lock (or by the GPUs, ordered by the marks).
unsafe impl Send for Pool {}

impl MultiGrid {
    /// A group of `gpus` (each a different device that supports cooperative launches; at most
    /// [`MULTI_GRID_MAX`]). Grid rank `r` runs on `gpus[r]`.
    ///
    /// # Errors
    /// An empty or too large list, the same device twice, a device without cooperative launch.
    pub fn new(gpus: &[Gpu]) -> Result<Self> {
        if gpus.is_empty() || gpus.len() > MULTI_GRID_MAX {
            return Err(Error::Argument(format!("a MultiGrid needs 1 to {MULTI_GRID_MAX} GPUs, {} given", gpus.len())));
        }
        for g in gpus {
            // Multi-grid launches span CUDA contexts.
            g.inner
                .cuda("a MultiGrid (multi-grid launches span GPUs; on the CPU device, use one cooperative launch)")?;
        }
        for (i, g) in gpus.iter().enumerate() {
            let info = g.info();
            if gpus[..i].iter().any(|h| h.info().ordinal == info.ordinal) {
                return Err(Error::Argument(format!(
                    "device {} appears twice in a MultiGrid: two grids on one GPU need not fit at once, and their \
                     barrier would then never complete",
                    info.ordinal
                )));
            }
            if !info.cooperative_launch {
                return Err(Error::Argument(format!(
                    "device {} ({}) does not support cooperative launches",
                    info.ordinal, info.name
                )));
            }
        }
        Ok(Self {
            gpus: gpus.to_vec(),
            timeout_ms: DEFAULT_TIMEOUT.as_millis() as u32,
            pool: Mutex::new(Pool { pages: Vec::new(), blocks: Vec::new() }),
        })
    }

    /// How long a grid waits at a multi-grid sync for the others before ending the launch with
    /// an `Err` (`None`: forever; rounded up to whole milliseconds, at most about 49 days).
    #[must_use]
    pub fn with_timeout(mut self, timeout: Option<Duration>) -> Self {
        self.timeout_ms = match timeout {
            None => 0,
            Some(t) => t.as_millis().clamp(1, u32::MAX as u128) as u32,
        };
        self
    }

    /// The GPUs, in grid-rank order.
    #[must_use]
    pub fn gpus(&self) -> &[Gpu] {
        &self.gpus
    }

    /// How many grids a launch has.
    #[must_use]
    pub fn len(&self) -> usize {
        self.gpus.len()
    }

    /// Always false: a group has at least one GPU.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        false
    }

    /// Starts a launch of one grid per GPU, each with `config`: add the grids with the
    /// kernel's generated `add_to`, then [`MultiGridLaunch::submit`].
    pub fn launch(&self, config: impl Into<LaunchConfig>) -> MultiGridLaunch<'_> {
        MultiGridLaunch { group: self, config: config.into(), grids: Vec::new() }
    }

    /// A free barrier block (allocating a page if none is), initialized for a launch.
    fn take_block(&self, pool: &mut Pool) -> Result<usize> {
        if let Some(i) = pool.blocks.iter().position(|b| b.busy.iter().all(|m| m.is_done())) {
            pool.blocks[i].busy.clear();
            return Ok(i);
        }
        let gpu0 = &self.gpus[0].inner;
        gpu0.bind()?;
        // A new pinned allocation, portable (pinned and mapped in every context) and mapped
        // into the device address space.
        let host = gpu0
            .backend
            .alloc_host(PAGE_BYTES, HostAlloc::PORTABLE)
            .map_err(gpu0.failed("allocating a multi-grid barrier"))?;
        let mut device = Vec::with_capacity(self.gpus.len());
        for g in &self.gpus {
            let mapped = g.inner.bind().and_then(|()| {
                // SAFETY: `host` is a live portable mapped allocation.
                unsafe { g.inner.backend.host_device_ptr(host) }.map_err(g.inner.failed("mapping a multi-grid barrier"))
            });
            match mapped {
                Ok(d) => device.push(d),
                Err(e) => {
                    // SAFETY: ours, never handed out.
                    let _ = unsafe { gpu0.backend.free_host(host) };
                    return Err(e);
                }
            }
        }
        let page = pool.pages.len();
        pool.pages.push(Page { host, device });
        for k in 0..BLOCKS_PER_PAGE {
            pool.blocks.push(Block { page, offset: k * BLOCK_BYTES, busy: Vec::new() });
        }
        Ok(pool.blocks.len() - BLOCKS_PER_PAGE)
    }
}

impl Drop for MultiGrid {
    fn drop(&mut self) {
        let pool = self.pool.get_mut().unwrap_or_else(|p| p.into_inner());
        // Wait for every grid that may still use a block; if one cannot be waited for (its
        // context is lost), keep the memory: the GPU may still write it.
        let mut ok = true;
        for b in &pool.blocks {
            for m in &b.busy {
                ok &= m.wait("freeing a multi-grid barrier").is_ok();
            }
        }
        if !ok {
            return;
        }
        for p in &pool.pages {
            // SAFETY: ours (allocated through the first GPU's backend, portable, so freed with
            // any context current); no grid uses it any more (waited above).
            let _ = unsafe { self.gpus[0].inner.backend.free_host(p.host) };
        }
    }
}

/// One grid of a [`MultiGridLaunch`], with its arguments copied.
struct Grid<'g> {
    function: &'g Function,
    stream: &'g Stream,
    rank: usize,
    /// Each parameter's bytes, in 16-byte cells (aligned for any parameter type).
    cells: Vec<u128>,
    /// (first cell, bytes) of each parameter.
    params: Vec<(usize, usize)>,
    /// The PTX parameter index of the `MultiGridGroup`'s barrier block, if the kernel has one.
    multi: Option<usize>,
    /// The operands, kept alive until the launch is enqueued, and whether each is `shared`.
    uses: Vec<(Captured, bool)>,
}

impl Grid<'_> {
    fn uses(&self) -> Vec<Use<'_>> {
        self.uses
            .iter()
            .map(|(c, shared)| {
                let mut u = Use::captured(c);
                u.shared = *shared;
                u
            })
            .collect()
    }
}

/// A multi-grid launch being put together: [`MultiGrid::launch`], one `add_to` per GPU,
/// then [`submit`](Self::submit). Dropping it launches nothing.
pub struct MultiGridLaunch<'g> {
    group: &'g MultiGrid,
    config: LaunchConfig,
    grids: Vec<Grid<'g>>,
}

impl std::fmt::Debug for MultiGridLaunch<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MultiGridLaunch")
            .field("group", self.group)
            .field("config", &self.config)
            .field("grids", &self.grids.len())
            .finish()
    }
}

impl<'g> MultiGridLaunch<'g> {
    /// What generated `add_to` methods call: adds the grid of `function` on `stream` (its rank
    /// is the position of the stream's GPU in the group), copying the parameters.
    ///
    /// # Safety
    /// `params[i]` must point at `sizes[i]` readable bytes holding the kernel's `i`-th PTX
    /// parameter, and the kernel must be safe to run with them, given that `uses` covers the
    /// memory it accesses through them; `multi` is the index of the `MultiGridGroup`'s first
    /// PTX parameter (barrier block, then rank and grid count as `u32`s), which `submit` fills in.
    ///
    /// # Errors
    /// A stream of a GPU outside the group or of a GPU that already has a grid, operands that
    /// cannot be kept for the launch.
    #[doc(hidden)]
    pub unsafe fn add_tracked(
        &mut self,
        function: &'g Function,
        stream: &'g Stream,
        params: &[*mut c_void],
        sizes: &[usize],
        multi: Option<usize>,
        uses: &[Use<'_>],
    ) -> Result<()> {
        let name = function.name_arc();
        let ordinal = stream.inner.gpu.info.ordinal;
        let Some(rank) = self.group.gpus.iter().position(|g| g.info().ordinal == ordinal) else {
            return Err(Error::Cooperative {
                kernel: name,
                reason: format!("the stream is on device {ordinal}, which is not in the MultiGrid"),
            });
        };
        if self.grids.iter().any(|g| g.rank == rank) {
            return Err(Error::Cooperative {
                kernel: name,
                reason: format!("device {ordinal} (grid rank {rank}) already has a grid in this launch"),
            });
        }
        debug_assert_eq!(params.len(), sizes.len());
        let mut cells = Vec::new();
        let mut spans = Vec::with_capacity(params.len());
        for (&p, &n) in params.iter().zip(sizes) {
            let first = cells.len();
            cells.resize(first + n.div_ceil(16), 0u128);
            // SAFETY: `p` points at `n` readable bytes (the contract); the destination is `n`
            // bytes of fresh cells; they do not overlap.
            unsafe { std::ptr::copy_nonoverlapping(p.cast::<u8>(), cells[first..].as_mut_ptr().cast::<u8>(), n) };
            spans.push((first, n));
        }
        let mut kept = Vec::with_capacity(uses.len());
        for u in uses {
            let Some(owner) = u.owner else {
                return Err(Error::Cooperative {
                    kernel: name,
                    reason: "an operand of a multi-grid launch must be a device or pinned allocation".into(),
                });
            };
            kept.push((Captured { alloc: owner.clone(), start: u.start, end: u.end, write: u.write }, u.shared));
        }
        self.grids.push(Grid { function, stream, rank, cells, params: spans, multi, uses: kept });
        Ok(())
    }

    /// The configuration every grid of this launch runs with.
    #[must_use]
    pub fn config(&self) -> LaunchConfig {
        self.config
    }

    /// The checks of [`MultiGridLaunch::submit`] before anything is enqueued (every grid, one
    /// kernel, each grid's launch path checks, no memory written by one grid and used by
    /// another), with the grids put in rank order. Returns the kernel's name.
    fn check(&mut self) -> Result<Arc<str>> {
        let n = self.group.gpus.len();
        let first = self.grids.first().map(|g| g.function.name_arc());
        let Some(name) = first else {
            return Err(Error::Argument("a multi-grid launch with no grids: add one per GPU with `add_to`".into()));
        };
        if self.grids.len() != n {
            let missing: Vec<usize> = (0..n)
                .filter(|r| !self.grids.iter().any(|g| g.rank == *r))
                .map(|r| self.group.gpus[r].info().ordinal)
                .collect();
            return Err(Error::Cooperative {
                kernel: name,
                reason: format!(
                    "a multi-grid launch needs a grid on every GPU of its MultiGrid; devices {missing:?} have none"
                ),
            });
        }
        self.grids.sort_by_key(|g| g.rank);
        for g in &self.grids {
            if *g.function.name() != *name {
                return Err(Error::Cooperative {
                    kernel: name,
                    reason: format!(
                        "grid rank {} is kernel `{}`: every grid must run the same kernel",
                        g.rank,
                        g.function.name()
                    ),
                });
            }
            crate::peer::require_same(
                || format!("kernel `{name}`"),
                g.function.module_gpu(),
                &g.stream.inner.gpu,
                "the kernel was loaded on another GPU than its grid's stream",
            )?;
            // The launch path's first steps (`module::launch`): co-residency, then contexts.
            g.function.prepare(Launch::Cooperative, g.stream, &self.config, &g.uses())?;
        }
        for (i, a) in self.grids.iter().enumerate() {
            for b in &self.grids[i + 1..] {
                for (ua, sa) in &a.uses {
                    for (ub, sb) in &b.uses {
                        let overlap = ua.start < ub.end && ub.start < ua.end;
                        // Two `shared` uses are one `MultiGridVec`'s replicas, whose phases the
                        // grids' barriers order.
                        let phased = *sa && *sb;
                        if Arc::ptr_eq(&ua.alloc, &ub.alloc) && overlap && (ua.write || ub.write) && !phased {
                            return Err(Error::Cooperative {
                                kernel: name,
                                reason: format!(
                                    "grids {} and {} both use bytes {}..{} of one allocation and one of them writes \
                                     it: that races between GPUs (and ordering the grids would deadlock their barrier); \
                                     give each grid its own output",
                                    a.rank,
                                    b.rank,
                                    ua.start.max(ub.start),
                                    ua.end.min(ub.end)
                                ),
                            });
                        }
                    }
                }
            }
        }
        Ok(name)
    }

    /// Checks every grid, then enqueues all of them (see [`MultiGrid`] for what is checked and
    /// guaranteed).
    ///
    /// # Errors
    /// A GPU of the group without its grid; grids of different kernels; a grid that cannot be
    /// co-resident on its GPU ([`Error::CooperativeTooLarge`]); an operand of another GPU the
    /// kernel may not read ([`Error::CrossDevice`]); memory written by one grid and used by
    /// another (a race between GPUs, which ordering them would turn into a deadlock); a driver
    /// error (after which the grids already enqueued end at their first sync).
    pub fn submit(mut self) -> Result<()> {
        let name = self.check()?;
        let n = self.group.gpus.len();

        // No stream of the launch enters a capture until it is enqueued.
        let gates = gates_outside_capture(
            self.grids.iter().map(|g| &*g.stream.inner),
            &format!("kernel `{name}`"),
            "a multi-grid launch cannot be captured into a graph (a grid's stream is in a capture): its grids must \
             start together on every GPU",
        )?;
        // Everything is checked: from here on, all grids are enqueued or the launch is aborted.
        let mut last = LAST_LAUNCH.lock().unwrap_or_else(|p| p.into_inner());
        let mut pool = self.group.pool.lock().unwrap_or_else(|p| p.into_inner());
        let block = self.group.take_block(&mut pool)?;
        let (page, offset) = (pool.blocks[block].page, pool.blocks[block].offset);
        let host = pool.pages[page].host;
        // SAFETY: the block is free (no grid that used it is still running) and in a live page;
        // the host initializes it before any grid of this launch is enqueued.
        let words = unsafe { host.add(offset).cast::<MultiGridWords>() };
        // SAFETY: as above.
        unsafe { words.write_volatile(MultiGridWords::new(self.group.timeout_ms)) };

        // Before the grids: each stream waits for the previous multi-grid launch and for the
        // other streams' earlier work.
        for g in &self.grids {
            g.stream.inner.gpu.bind()?;
            for m in last.iter().filter_map(Weak::upgrade) {
                m.make_wait(&g.stream.inner)?;
            }
            for o in &self.grids {
                if o.rank != g.rank {
                    o.stream.inner.make_wait(&g.stream.inner)?;
                }
            }
        }

        let page_device = &pool.pages[page].device;
        for g in &mut self.grids {
            if let Some(i) = g.multi {
                let device = page_device[g.rank] + offset as u64;
                let (w, r, c) = (g.params[i].0, g.params[i + 1].0, g.params[i + 2].0);
                g.cells[w] = device as u128;
                g.cells[r] = g.rank as u128;
                g.cells[c] = n as u128;
            }
        }
        let uses: Vec<Vec<Use<'_>>> = self.grids.iter().map(Grid::uses).collect();
        let parts: Vec<(&Arc<crate::stream::StreamInner>, &[Use<'_>])> =
            self.grids.iter().zip(&uses).map(|(g, u)| (&g.stream.inner, &u[..])).collect();
        let mut marks: Vec<Arc<Mark>> = Vec::with_capacity(n);
        let config = self.config;
        let grids = &self.grids;
        let tracked = run_tracked_multi(&parts, &gates, || {
            for (k, g) in grids.iter().enumerate() {
                let mut cells = g.cells.clone();
                let mut ptrs: Vec<*mut c_void> =
                    g.params.iter().map(|&(first, _)| (&raw mut cells[first]).cast::<c_void>()).collect();
                let r = g.stream.inner.gpu.bind().and_then(|()| {
                    // SAFETY: the parameters are the kernel's (the `add_tracked` contract), with
                    // the barrier block, rank and grid count filled in; co-residency was
                    // checked; the tracker ordered the stream after other work on the operands.
                    unsafe { g.function.enqueue(g.stream, config, &mut ptrs, LaunchMode::Cooperative) }
                });
                if let Err(e) = r {
                    return (k, Err(e));
                }
                match Mark::record(&g.stream.inner) {
                    Ok(m) => marks.push(Arc::new(m)),
                    Err(e) => return (k + 1, Err(e)),
                }
            }
            (grids.len(), Ok(()))
        });
        let failed = tracked.err();
        if failed.is_some() {
            // SAFETY: the block's abort word, in a live page; the grids only read it.
            unsafe { std::ptr::addr_of_mut!((*words).abort).write_volatile(1) };
        }
        if !marks.is_empty() {
            *last = marks.iter().map(Arc::downgrade).collect();
            pool.blocks[block].busy = marks;
        }
        match failed {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }
}

impl<'g> MultiGridLaunch<'g> {
    /// The group the launch runs on.
    #[must_use]
    pub fn group(&self) -> &'g MultiGrid {
        self.group
    }
}

/// The next `MultiGridVecBuffer` tag (each vector's is unique in the process).
static NEXT_TAG: AtomicU32 = AtomicU32::new(1);

/// The host side of a [`MultiGridVec<T>`](cohort::cg::MultiGridVec) kernel parameter: one
/// replica of `len` elements on every GPU of a [`MultiGrid`], with each GPU's table of replica
/// addresses and its barrier word. Making it enables peer access between every pair of the
/// group's GPUs (a kernel's writes go to every replica). Pass `&mut buffer` to each grid's
/// `add_to`.
pub struct MultiGridVecBuffer<T: DeviceCopy> {
    ordinals: Vec<usize>,
    replicas: Vec<DeviceBuffer<T>>,
    tables: Vec<DeviceBuffer<u64>>,
    barriers: Vec<DeviceBuffer<u32>>,
    tag_id: u32,
}

impl<T: DeviceCopy> std::fmt::Debug for MultiGridVecBuffer<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MultiGridVecBuffer").field("gpus", &self.ordinals).field("len", &self.len()).finish()
    }
}

impl<T: DeviceCopy> MultiGridVecBuffer<T> {
    /// `len` zeroed elements on every GPU of `group`.
    ///
    /// # Errors
    /// Two GPUs of the group without a peer path ([`Error::PeerAccessUnsupported`]), an
    /// allocation failure.
    pub fn new(group: &MultiGrid, len: usize) -> Result<Self> {
        let gpus = group.gpus();
        for a in gpus {
            for b in gpus {
                if a.info().ordinal != b.info().ordinal {
                    a.enable_peer_access(b)?;
                }
            }
        }
        let tag_id = NEXT_TAG.fetch_add(1, Ordering::Relaxed);
        if tag_id >= 1 << 31 {
            return Err(Error::Argument("too many MultiGridVecBuffers made in this process (2³¹)".into()));
        }
        let replicas = gpus.iter().map(|g| DeviceBuffer::<T>::zeroed(g, len)).collect::<Result<Vec<_>>>()?;
        let addrs: Vec<u64> = replicas.iter().map(|r| r.as_device_ptr().addr()).collect();
        let tables = gpus.iter().map(|g| DeviceBuffer::from_slice(g, &addrs)).collect::<Result<Vec<_>>>()?;
        let barriers = gpus.iter().map(|g| DeviceBuffer::<u32>::zeroed(g, 1)).collect::<Result<Vec<_>>>()?;
        Ok(Self { ordinals: gpus.iter().map(|g| g.info().ordinal).collect(), replicas, tables, barriers, tag_id })
    }

    /// Elements of each replica.
    #[must_use]
    pub fn len(&self) -> usize {
        self.replicas[0].len()
    }

    /// Whether it has no elements.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Copies `data` into every replica (synchronously, after the work still using them).
    ///
    /// # Errors
    /// A length mismatch, a driver failure.
    pub fn copy_from(&mut self, data: &[T]) -> Result<()> {
        self.replicas.iter_mut().try_for_each(|r| r.copy_from(data))
    }

    /// The vector (grid rank 0's replica; every replica holds the same after a launch).
    ///
    /// # Errors
    /// A driver failure.
    pub fn to_vec(&self) -> Result<Vec<T>> {
        self.replicas[0].to_vec()
    }

    /// Each GPU's replica, in grid-rank order (read-only: to check that they agree).
    #[must_use]
    pub fn replicas(&self) -> &[DeviceBuffer<T>] {
        &self.replicas
    }

    fn rank(&self, stream: &Stream) -> Result<usize> {
        let ordinal = stream.inner.gpu.info.ordinal;
        self.ordinals.iter().position(|&o| o == ordinal).ok_or_else(|| {
            Error::Argument(format!(
                "a MultiGridVecBuffer of devices {:?} passed to a grid on device {ordinal}",
                self.ordinals
            ))
        })
    }
}

/// Host arguments for a kernel's `MultiGridVec<T>` parameter: `&mut MultiGridVecBuffer<T>`
/// made for the launch's GPUs, in the same order.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be passed for a `MultiGridVec<{T}>` kernel parameter",
    label = "expected `&mut MultiGridVecBuffer<{T}>`"
)]
///
/// # Safety
/// A launcher passes `raw_parts` to the kernel as they are: they must name memory of the
/// argument (the address of `len` elements, or of a `rows × cols` matrix, alive and — where the
/// kernel writes — exclusively borrowed for as long as `self` is), and `uses` must name that
/// memory, as written where the kernel writes it.
pub unsafe trait MultiGridVecArg<T> {
    /// This grid's replica, the replica table, length, replica count, barrier word and tag.
    ///
    /// # Errors
    /// A buffer made for other GPUs than the launch's, or in another order.
    #[doc(hidden)]
    fn raw_parts(&self, launch: &MultiGridLaunch<'_>, stream: &Stream) -> Result<(u64, u64, usize, u32, u64, u32)>;
    /// Every replica (written by every grid, `shared`), this grid's table and barrier word.
    #[doc(hidden)]
    fn uses(&self, stream: &Stream) -> Vec<Use<'_>>;
}

// SAFETY: the parts are this memory's own address and length (shape), its uses the same range,
// written where the kernel writes it; the borrow keeps it alive (and exclusive, for `&mut`).
unsafe impl<T: DeviceCopy> MultiGridVecArg<T> for &mut MultiGridVecBuffer<T> {
    fn raw_parts(&self, launch: &MultiGridLaunch<'_>, stream: &Stream) -> Result<(u64, u64, usize, u32, u64, u32)> {
        let group: Vec<usize> = launch.group.gpus.iter().map(|g| g.info().ordinal).collect();
        if group != self.ordinals {
            return Err(Error::Argument(format!(
                "a MultiGridVecBuffer made for devices {:?} passed to a launch on devices {group:?}: make it for the \
                 launch's MultiGrid",
                self.ordinals
            )));
        }
        let r = self.rank(stream)?;
        Ok((
            self.replicas[r].as_device_ptr().addr(),
            self.tables[r].as_device_ptr().addr(),
            self.len(),
            self.replicas.len() as u32,
            self.barriers[r].as_device_ptr().addr(),
            self.tag_id,
        ))
    }
    fn uses(&self, stream: &Stream) -> Vec<Use<'_>> {
        let Ok(r) = self.rank(stream) else { return Vec::new() };
        let mut uses: Vec<Use<'_>> = self
            .replicas
            .iter()
            .map(|b| {
                let mut u = crate::memory::buffer_use(b, true);
                u.shared = true;
                u
            })
            .collect();
        uses.push(crate::memory::buffer_use(&self.tables[r], false));
        uses.push(crate::memory::buffer_use(&self.barriers[r], true));
        uses
    }
}
