//! Device-side launches (dynamic parallelism) on the CPU device, and what counts as global
//! memory.
//!
//! A kernel running on the CPU engine launches a child grid as on a GPU (the device library's
//! `ParamBuffer` on the host calls [`DeviceLaunch`]): the child's host entry (an [`Entry`], the
//! `__cohort_cpu_<entry>` function `#[kernel]` generates), its configuration and a parameter
//! buffer laid out exactly as the device runtime's go into a queue of the launching grid. When
//! the grid has completed, [`launch_typed`](crate::launch_typed) runs its queue, on the OS
//! thread that made the launch:
//!
//! 1. the fire-and-forget and block-stream children, in launch order (a valid schedule: a
//!    parent can never wait for them, so running them after it is one of the orders a GPU may
//!    pick; one block's block-stream children keep their order);
//! 2. then the tail launches, one after another, in launch order.
//!
//! Each child's own children run the same way before the next child starts, so a child has
//! completed with all its descendants before anything launched after it runs, and the host's
//! launch returns when the whole tree has completed.
//!
//! Limits, as on a GPU: a grid nested deeper than [`MAX_DEPTH`] cannot launch
//! ([`Refusal::NoSlot`]), and the whole tree descending from one host launch makes at most the
//! budget the host gives it ([`with_launch_budget`]: the pending-launch limit) launches; past
//! it a launch is [`Refusal::BudgetSpent`]. The queue therefore never holds more than the
//! budget. A child that fails (a panic, a deadlock) ends the host launch with
//! [`CpuError::DeviceLaunch`], naming the child, the launch's call site and the child's error;
//! the children still queued are dropped.
//!
//! Global memory: a pointer that a parent hands a child must lie in global memory, never in
//! its shared memory or its stack (a GPU's local memory), which the child can't see — and on
//! the CPU device the thread's stack is gone (reused) when a tail child runs. The runtime
//! registers every allocation of the CPU device ([`register_global`]), and each loaded module
//! its `global!` variables (not its `constant!` ones: constant memory on a GPU); [`is_global`]
//! says whether a range lies inside one. `memcpy_async` asks it too (`cp.async` reads global
//! memory only).

use core::ffi::c_void;
use core::panic::Location;
use std::cell::Cell;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};

use crate::error::CpuError;
use crate::vars::VarTable;
use crate::{Dim3, LaunchSpec, Mode};

/// A kernel's host entry (`__cohort_cpu_<entry>`, made by `#[kernel]`): reads one pointer per
/// PTX parameter from the array, then runs the launch.
///
/// # Safety (for callers)
/// The array holds one pointer per PTX parameter of the entry, in order, each to a value of
/// that parameter's type, valid for the whole launch; the spec passes the checks a GPU launch
/// of the kernel passes.
pub type Entry = unsafe fn(*const *mut c_void, &LaunchSpec) -> Result<(), CpuError>;

/// The deepest nesting a grid may launch from: a grid at this depth (the host's grid is depth
/// 0) gets [`Refusal::NoSlot`], as the device runtime refuses a launch past its nesting limit.
pub const MAX_DEPTH: u32 = 24;

/// Why a device-side launch was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refusal {
    /// Not inside a launch that allows device-side launches (a launch not made by the runtime,
    /// with no budget).
    NotInTree,
    /// Nested deeper than [`MAX_DEPTH`], or a configuration the engine can't run (the device
    /// runtime gives no parameter buffer then).
    NoSlot,
    /// The tree's launch budget is spent.
    BudgetSpent,
}

/// The stream a child goes into (the device runtime's stream handles).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    /// Fire-and-forget (`0x4`) or the block's stream (`0`): runs before the tail launches.
    Concurrent,
    /// `cudaStreamTailLaunch` (`0x3`).
    Tail,
}

/// The tree of grids descending from one host launch.
struct Tree {
    /// Launches it may still make.
    budget: AtomicU64,
    /// The parent launch's options (schedule, race check, workers, stacks), which children
    /// inherit.
    options: LaunchSpec,
    /// The module variables of the launch's module.
    vars: Option<Arc<VarTable>>,
}

/// One grid's queue of children.
struct Grid {
    tree: Arc<Tree>,
    depth: u32,
    queue: Mutex<Vec<Child>>,
}

/// A queued child grid.
struct Child {
    entry: Entry,
    name: &'static str,
    site: &'static Location<'static>,
    spec: LaunchSpec,
    kind: Kind,
    /// The parameters, at the device runtime's offsets.
    buf: Vec<u8>,
    /// Each parameter's offset in `buf`.
    offsets: Vec<usize>,
}

thread_local! {
    /// The grid whose threads run on this OS thread, if it may launch children.
    static GRID: Cell<*const Grid> = const { Cell::new(core::ptr::null()) };
    /// What the next launch on this OS thread from outside a kernel belongs to: a tree and the
    /// depth of its grid (set by [`with_launch_budget`] and by the engine for each child).
    static NEXT: Cell<Option<(*const Tree, u32)>> = const { Cell::new(None) };
}

/// Runs `f` (which makes one launch, e.g. a host entry) as a launch of the runtime's CPU
/// device: its grid may make `budget` device-side launches in all, itself and its descendants
/// together (their children run before the launch returns), and its kernels find the module
/// variables of `vars` ([`module_var`](crate::module_var)).
pub fn with_launch_budget<R>(budget: u64, vars: Option<Arc<VarTable>>, f: impl FnOnce() -> R) -> R {
    let tree = Arc::new(Tree { budget: AtomicU64::new(budget), options: LaunchSpec::new(1u32, 1u32), vars });
    let prev = NEXT.with(|n| n.replace(Some((Arc::into_raw(tree), 0))));
    let r = f();
    let left = NEXT.with(|n| n.replace(prev));
    if let Some((t, _)) = left {
        // SAFETY: `f` made no launch (or `launch_typed` would have taken it): the pointer is
        // still the one made by `Arc::into_raw` above, given back once.
        drop(unsafe { Arc::from_raw(t) });
    }
    r
}

/// The module variables of the launch whose thread runs on this OS thread (null if none).
pub(crate) fn current_vars() -> *const VarTable {
    let g = GRID.with(Cell::get);
    if g.is_null() {
        return core::ptr::null();
    }
    // SAFETY: `GRID` points at the running launch's `Grid`, alive until its threads finish.
    unsafe { &*g }.tree.vars.as_ref().map_or(core::ptr::null(), Arc::as_ptr)
}

/// The grid scope of a launch starting on this OS thread: taken from [`NEXT`].
pub(crate) struct Scope(Option<Grid>);

impl Scope {
    /// Takes this thread's ticket for a new launch of `spec`, if there is one.
    pub(crate) fn enter(spec: &LaunchSpec) -> Self {
        let Some((tree, depth)) = NEXT.with(Cell::take) else { return Self(None) };
        // SAFETY: every ticket holds one strong count made by `Arc::into_raw` (in
        // `with_launch_budget` or `run_children`), which this takes over.
        let mut tree = unsafe { Arc::from_raw(tree) };
        if depth == 0 {
            // The host launch: its options are the children's.
            if let Some(t) = Arc::get_mut(&mut tree) {
                t.options = spec.clone();
            }
        }
        Self(Some(Grid { tree, depth, queue: Mutex::new(Vec::new()) }))
    }

    /// Makes this grid the one whose threads run on this OS thread (a worker), until the guard
    /// drops.
    pub(crate) fn install(&self) -> Installed {
        let p = self.0.as_ref().map_or(core::ptr::null(), |g| g as *const Grid);
        Installed(GRID.with(|c| c.replace(p)))
    }

    /// Runs the queued children (see the module docs), then theirs.
    pub(crate) fn run_children(self) -> Result<(), CpuError> {
        let Some(grid) = self.0 else { return Ok(()) };
        let queue = grid.queue.into_inner().unwrap_or_else(|p| p.into_inner());
        let (concurrent, tails): (Vec<Child>, Vec<Child>) = queue.into_iter().partition(|c| c.kind == Kind::Concurrent);
        for child in concurrent.into_iter().chain(tails) {
            let ptrs: Vec<*mut c_void> =
                child.offsets.iter().map(|&o| child.buf.as_ptr().wrapping_add(o).cast_mut().cast()).collect();
            let ticket = Arc::into_raw(grid.tree.clone());
            let prev = NEXT.with(|n| n.replace(Some((ticket, grid.depth + 1))));
            // SAFETY: `ptrs` holds one pointer per PTX parameter of the child's entry, each to
            // the bytes the generated launcher pushed as that parameter's type at its natural
            // offset (the entry reads them unaligned); `buf` lives until the entry returns. The
            // launcher checked what the values point at (global memory) and the configuration
            // (`DeviceLaunch::new`), as the device runtime does.
            let r = unsafe { (child.entry)(ptrs.as_ptr(), &child.spec) };
            if let Some((t, _)) = NEXT.with(|n| n.replace(prev)) {
                // SAFETY: the entry did not launch (it failed before): the ticket made above,
                // given back once.
                drop(unsafe { Arc::from_raw(t) });
            }
            if let Err(error) = r {
                return Err(CpuError::DeviceLaunch {
                    kernel: child.name,
                    site: child.site,
                    grid: child.spec.grid,
                    block: child.spec.block,
                    error: Box::new(error),
                });
            }
        }
        Ok(())
    }
}

/// Restores the OS thread's previous grid when dropped.
pub(crate) struct Installed(*const Grid);

impl Drop for Installed {
    fn drop(&mut self) {
        GRID.with(|c| c.set(self.0));
    }
}

/// A child launch being prepared by a thread of a running kernel (the host build of the device
/// library's parameter buffer).
pub struct DeviceLaunch {
    child: Child,
    grid: *const Grid,
}

impl DeviceLaunch {
    /// Reserves a launch of `entry` (kernel `name`) with `grid`, `block` and `dynamic_shared`
    /// bytes, taking one unit of the tree's budget.
    ///
    /// # Errors
    /// [`Refusal`]: not in a tree, nested too deep or an impossible configuration, no budget.
    #[track_caller]
    pub fn new(
        entry: Entry,
        name: &'static str,
        grid: Dim3,
        block: Dim3,
        dynamic_shared: u32,
    ) -> Result<Self, Refusal> {
        let site = Location::caller();
        let g = GRID.with(Cell::get);
        if g.is_null() || !crate::in_kernel() {
            return Err(Refusal::NotInTree);
        }
        // SAFETY: `GRID` points at the `Grid` of the launch running this kernel thread: it
        // lives (in `launch_typed`'s frame) until every thread of the grid has finished.
        let gr = unsafe { &*g };
        if gr.depth >= MAX_DEPTH {
            return Err(Refusal::NoSlot);
        }
        let o = &gr.tree.options;
        let mut spec = LaunchSpec::new(grid, block).dynamic_shared(dynamic_shared);
        spec.mode = Mode::Threads;
        spec.random_schedule = o.random_schedule;
        spec.race_check = o.race_check;
        spec.workers = o.workers;
        spec.stack_bytes = o.stack_bytes;
        spec.spin_limit = o.spin_limit;
        if crate::engine::validate(&spec).is_err() {
            return Err(Refusal::NoSlot);
        }
        if gr.tree.budget.try_update(Ordering::Relaxed, Ordering::Relaxed, |b| b.checked_sub(1)).is_err() {
            return Err(Refusal::BudgetSpent);
        }
        Ok(Self {
            child: Child { entry, name, site, spec, kind: Kind::Tail, buf: Vec::new(), offsets: Vec::new() },
            grid: g,
        })
    }

    /// Makes room for the next parameter, `size` bytes at the next multiple of `align` (the
    /// device runtime's layout: each parameter at its natural alignment), and returns where to
    /// write it (unaligned): valid until the next call on `self`.
    pub fn reserve(&mut self, align: usize, size: usize) -> *mut u8 {
        let buf = &mut self.child.buf;
        let off = buf.len().next_multiple_of(align.max(1));
        buf.resize(off + size, 0);
        self.child.offsets.push(off);
        buf[off..].as_mut_ptr()
    }

    /// Queues the child into the device runtime's stream `stream` (`0x3` tail, `0x4`
    /// fire-and-forget, `0` the block's stream).
    pub fn launch(mut self, stream: u64) {
        self.child.kind = if stream == 0x3 { Kind::Tail } else { Kind::Concurrent };
        // SAFETY: as in `new`: the grid outlives its threads, and this runs on one of them
        // (a `DeviceLaunch` is made and consumed by the same kernel thread: it is not `Send`).
        let gr = unsafe { &*self.grid };
        gr.queue.lock().unwrap_or_else(|p| p.into_inner()).push(self.child);
    }
}

/// Global memory of the CPU device: start → length.
static GLOBAL: RwLock<BTreeMap<usize, usize>> = RwLock::new(BTreeMap::new());

/// Records `len` bytes at `addr` as global memory (the runtime's allocations on the CPU device).
pub fn register_global(addr: usize, len: usize) {
    GLOBAL.write().unwrap_or_else(|p| p.into_inner()).insert(addr, len);
}

/// Forgets the global memory registered at `addr`.
pub fn unregister_global(addr: usize) {
    GLOBAL.write().unwrap_or_else(|p| p.into_inner()).remove(&addr);
}

/// Whether `len` bytes at `addr` lie inside one range of registered global memory (an empty
/// range anywhere does).
#[must_use]
pub fn is_global(addr: usize, len: usize) -> bool {
    if len == 0 {
        return true;
    }
    let map = GLOBAL.read().unwrap_or_else(|p| p.into_inner());
    map.range(..=addr).next_back().is_some_and(|(&start, &n)| addr.checked_add(len).is_some_and(|end| end <= start + n))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{launch, thread_rank};

    /// A host entry whose one parameter is a `u32` it appends to `LOG` (thread 0 only).
    unsafe fn child(params: *const *mut c_void, spec: &LaunchSpec) -> Result<(), CpuError> {
        // SAFETY: the test pushes one `u32` per launch.
        let v = unsafe { (*params).cast::<u32>().read_unaligned() };
        launch(spec, &|| {
            if thread_rank() == 0 {
                LOG.lock().unwrap().push(v);
            }
        })
    }

    static LOG: Mutex<Vec<u32>> = Mutex::new(Vec::new());

    fn queue(v: u32, stream: u64) -> Result<(), Refusal> {
        let mut l = DeviceLaunch::new(child, "child", Dim3::ONE, Dim3::new(2, 1, 1), 0)?;
        // SAFETY: `reserve` gave 4 writable bytes.
        unsafe { l.reserve(4, 4).cast::<u32>().write_unaligned(v) };
        l.launch(stream);
        Ok(())
    }

    #[test]
    fn children_run_after_the_grid_concurrent_first_then_tails_in_order() {
        let refused = std::sync::atomic::AtomicU32::new(0);
        let r = with_launch_budget(4, None, || {
            launch(&LaunchSpec::new(1u32, 4u32), &|| {
                if thread_rank() == 0 {
                    // Tail, fire-and-forget, tail, block stream, then one past the budget.
                    for (v, stream) in [(1, 0x3), (2, 0x4), (3, 0x3), (4, 0), (5, 0x4)] {
                        if queue(v, stream) == Err(Refusal::BudgetSpent) {
                            refused.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                    assert!(LOG.lock().unwrap().is_empty(), "a child ran before its parent grid completed");
                }
            })
        });
        r.unwrap();
        assert_eq!(*LOG.lock().unwrap(), [2, 4, 1, 3]);
        assert_eq!(refused.into_inner(), 1);
        // Outside a budgeted launch, nothing is launched.
        let outside = std::sync::atomic::AtomicBool::new(false);
        launch(&LaunchSpec::new(1u32, 1u32), &|| {
            outside.store(queue(9, 0x3) == Err(Refusal::NotInTree), Ordering::Relaxed)
        })
        .unwrap();
        assert!(outside.into_inner());
    }

    #[test]
    fn global_memory_is_what_was_registered() {
        let v = [0u64; 8];
        let a = v.as_ptr() as usize;
        assert!(!is_global(a, 8));
        register_global(a, 64);
        assert!(is_global(a, 64) && is_global(a + 8, 56) && is_global(a + 63, 1));
        assert!(!is_global(a + 8, 57) && !is_global(a.wrapping_sub(1), 2));
        assert!(is_global(a + 100, 0), "an empty range is anywhere");
        unregister_global(a);
        assert!(!is_global(a, 8));
    }
}
