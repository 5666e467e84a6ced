//! Shared memory of a block, and the optional shared-memory race check.
//!
//! Each resident block owns a window of [`SHARED_CAPACITY`] bytes (allocated zeroed, so pages
//! the block never touches cost nothing). Addresses in the window are `u32` offsets, as PTX's
//! shared window is: dynamic shared memory sits at offset 0 with the launch's size, static
//! `__shared__` variables follow, each placed the first time a thread of the block asks for it
//! ([`shared_static`], keyed by the variable's identity, size and alignment). Fresh shared memory
//! is filled with [`GARBAGE`] (a GPU's shared memory starts uninitialized; zeros would hide a
//! missing initialization).
//!
//! The race check ([`LaunchSpec::race_check`](crate::LaunchSpec::race_check)) keeps a vector
//! clock per thread: barriers (block, named, warp, grid) order the accesses of the threads that
//! meet at them; shuffles, votes and other warp collectives do not order memory (PTX gives them
//! no memory semantics). Two accesses to one byte by different threads, at least one a write,
//! that no barrier orders are a [`CpuError::SharedRace`] naming both sites.

use core::cell::{Cell, RefCell};
use core::panic::Location;
use std::alloc::Layout;
use std::collections::HashMap;

use crate::ctx::{self, current};
use crate::error::CpuError;

/// Bytes of shared memory a block may use (dynamic and static together): 227 KiB, the most an
/// sm_90 block can opt in to.
pub const SHARED_CAPACITY: usize = 227 * 1024;

/// The byte fresh shared memory holds.
pub const GARBAGE: u8 = 0xCD;

/// Alignment of the window's base (the largest a static may ask for: 1024, what a tensor copy
/// with 128-byte swizzling needs of its tile).
const BASE_ALIGN: usize = 1024;

fn layout() -> Layout {
    // The size is non-zero and the alignment a power of two.
    Layout::from_size_align(SHARED_CAPACITY, BASE_ALIGN).expect("shared-memory layout")
}

/// One access remembered by the race check.
#[derive(Clone, Copy)]
struct Acc {
    rank: u32,
    clock: u32,
    site: &'static Location<'static>,
}

#[derive(Default)]
struct Shadow {
    write: Option<Acc>,
    reads: Vec<Acc>,
}

/// Vector clocks of a block's threads and the last accesses of each shared byte.
pub(crate) struct RaceState {
    n: usize,
    vc: Vec<u32>,
    shadow: HashMap<u32, Shadow>,
}

impl RaceState {
    fn new(n: usize) -> Self {
        let mut vc = vec![0; n * n];
        for t in 0..n {
            vc[t * n + t] = 1;
        }
        Self { n, vc, shadow: HashMap::new() }
    }

    fn ordered(&self, t: u32, a: &Acc) -> bool {
        a.rank == t || self.vc[t as usize * self.n + a.rank as usize] >= a.clock
    }

    /// How many threads the clocks are for.
    pub(crate) fn threads(&self) -> usize {
        self.n
    }

    /// Thread `t`'s clock as a release (an mbarrier arrival): the clock, after which `t` starts
    /// a new epoch (its later accesses are not released by this one).
    pub(crate) fn release_row(&mut self, t: u32) -> Vec<u32> {
        let n = self.n;
        let row = self.vc[t as usize * n..(t as usize + 1) * n].to_vec();
        self.vc[t as usize * n + t as usize] += 1;
        row
    }

    /// Thread `t` acquires `clock` (an mbarrier phase it saw complete).
    pub(crate) fn acquire(&mut self, t: u32, clock: &[u32]) {
        let n = self.n;
        for (v, c) in self.vc[t as usize * n..(t as usize + 1) * n].iter_mut().zip(clock) {
            *v = (*v).max(*c);
        }
    }

    /// Joins the clocks of `ranks` (threads that just met at a barrier) and starts a new epoch
    /// for each of them.
    pub(crate) fn sync(&mut self, ranks: &[u32]) {
        let n = self.n;
        let mut joined = vec![0u32; n];
        for &t in ranks {
            for (j, v) in joined.iter_mut().zip(&self.vc[t as usize * n..(t as usize + 1) * n]) {
                *j = (*j).max(*v);
            }
        }
        for &t in ranks {
            let row = &mut self.vc[t as usize * n..(t as usize + 1) * n];
            row.copy_from_slice(&joined);
            row[t as usize] += 1;
        }
    }

    fn access(&mut self, t: u32, addr: u32, write: bool, site: &'static Location<'static>) -> Result<(), (Acc, bool)> {
        let clock = self.vc[t as usize * self.n + t as usize];
        let me = Acc { rank: t, clock, site };
        let mut sh = self.shadow.remove(&addr).unwrap_or_default();
        let res = (|| {
            if let Some(w) = sh.write.filter(|w| !self.ordered(t, w)) {
                return Err((w, true));
            }
            if write {
                if let Some(r) = sh.reads.iter().find(|r| !self.ordered(t, r)) {
                    return Err((*r, false));
                }
                sh.write = Some(me);
                sh.reads.clear();
            } else {
                sh.reads.retain(|r| !self.ordered(t, r));
                sh.reads.push(me);
            }
            Ok(())
        })();
        self.shadow.insert(addr, sh);
        res
    }
}

/// A static shared variable: its key, size and alignment.
pub(crate) type StaticKey = (usize, usize, usize);

/// A block's shared-memory window and its bookkeeping.
pub(crate) struct BlockShared {
    base: *mut u8,
    dyn_len: Cell<u32>,
    next: Cell<u32>,
    /// `(key, size, align) -> offset` of the statics placed so far in this block.
    statics: RefCell<Vec<(StaticKey, u32)>>,
    pub(crate) race: RefCell<Option<RaceState>>,
    /// The block's live mbarriers (`crate::mbarrier`).
    pub(crate) mbar: RefCell<crate::mbarrier::Mbars>,
}

impl BlockShared {
    pub(crate) fn new() -> Self {
        // SAFETY: the layout has a non-zero size.
        let base = unsafe { std::alloc::alloc_zeroed(layout()) };
        if base.is_null() {
            std::alloc::handle_alloc_error(layout());
        }
        Self {
            base,
            dyn_len: Cell::new(0),
            next: Cell::new(0),
            statics: RefCell::new(Vec::new()),
            race: RefCell::new(None),
            mbar: RefCell::new(HashMap::new()),
        }
    }

    /// Makes the window fresh for a new block: `dyn_len` bytes of dynamic shared memory filled
    /// with [`GARBAGE`], no statics, and a race check for `threads` threads if asked.
    pub(crate) fn reset(&self, dyn_len: u32, race: Option<usize>, whole: bool) {
        assert!(dyn_len as usize <= SHARED_CAPACITY);
        // A cluster launch's statics are placed by the launch (the same offset in every block,
        // as on a GPU) and not filled when placed: other blocks may have written this block's
        // copy by then. So the whole window starts as garbage.
        let fill = if whole { SHARED_CAPACITY } else { dyn_len as usize };
        // SAFETY: `base` points to SHARED_CAPACITY writable bytes owned by `self`, and no thread
        // of a block runs while its window is reset (the scheduler calls this between blocks).
        unsafe { core::ptr::write_bytes(self.base, GARBAGE, fill) };
        self.dyn_len.set(dyn_len);
        self.next.set(dyn_len.next_multiple_of(16));
        self.statics.borrow_mut().clear();
        *self.race.borrow_mut() = race.map(RaceState::new);
        self.mbar.borrow_mut().clear();
    }

    /// The window's first byte.
    pub(crate) fn base(&self) -> *mut u8 {
        self.base
    }

    fn place(&self, key: (usize, usize, usize)) -> Option<u32> {
        let mut statics = self.statics.borrow_mut();
        if let Some(&(_, off)) = statics.iter().find(|(k, _)| *k == key) {
            return Some(off);
        }
        let (_, size, align) = key;
        let off = (self.next.get() as usize).checked_next_multiple_of(align)?;
        let end = off.checked_add(size)?;
        if end > SHARED_CAPACITY {
            return None;
        }
        // SAFETY: `off..end` lies inside the window (checked above), which `self` owns; the
        // bytes are not yet handed out to any thread of this block.
        unsafe { core::ptr::write_bytes(self.base.add(off), GARBAGE, size) };
        self.next.set(end as u32);
        statics.push((key, off as u32));
        Some(off as u32)
    }
}

/// Windows freed most recently, not yet given back to the allocator: a shared-memory reference
/// kept past its launch (through a `static` of host code on the CPU device) then never points
/// into the window of a later launch's block (the allocator would hand the same address to the
/// next launch of the same size), so [`check_in_shared_window`] reports its use. Best effort:
/// older windows are freed, and blocks of one launch that run on one worker share its window.
static QUARANTINE: std::sync::Mutex<std::collections::VecDeque<usize>> =
    std::sync::Mutex::new(std::collections::VecDeque::new());

/// Windows kept in [`QUARANTINE`] (16 × 227 KiB).
const QUARANTINED: usize = 16;

impl Drop for BlockShared {
    fn drop(&mut self) {
        let oldest = {
            let mut q = QUARANTINE.lock().unwrap_or_else(|p| p.into_inner());
            q.push_back(self.base as usize);
            if q.len() > QUARANTINED { q.pop_front() } else { None }
        };
        if let Some(base) = oldest {
            // SAFETY: every address in the quarantine is a window's `base`, allocated in `new`
            // with this same layout, put there once by its window's drop and taken out once here.
            unsafe { std::alloc::dealloc(base as *mut u8, layout()) };
        }
    }
}

pub(crate) fn block_of(c: &ctx::Ctx) -> &BlockShared {
    // SAFETY: the scheduler points `block` at the running block's `BlockShared`, which it keeps
    // alive (boxed, not moved) for as long as any thread of that block runs.
    unsafe { &*c.block }
}

/// The generic (host) address of the running block's shared window: shared address `a` is the
/// byte `shared_window() + a`. Valid while the block runs; every block has its own window.
#[inline]
#[must_use]
#[track_caller]
pub fn shared_window() -> *mut u8 {
    block_of(&current()).base
}

/// Checks that `size` bytes at host address `ptr` lie in the running block's shared window, and
/// ends the thread with a [`CpuError::Misuse`] of `op` otherwise: a reference into shared memory
/// (a shared-memory atomic) kept past the block that made it — the window it pointed into is
/// another block's now, or freed. Every thread of a block runs on one OS thread, so memory of the
/// running block's window is touched by nobody else while this thread uses it. Inlined (it runs
/// on every shared-memory atomic); the failure is out of line.
#[inline]
#[track_caller]
pub fn check_in_shared_window(op: &'static str, ptr: *const u8, size: usize) {
    let base = block_of(&current()).base as usize;
    let at = ptr as usize;
    if !(at >= base && at.checked_add(size).is_some_and(|end| end <= base + SHARED_CAPACITY)) {
        outside_window(op, Location::caller());
    }
}

#[cold]
#[inline(never)]
fn outside_window(op: &'static str, site: &'static Location<'static>) -> ! {
    ctx::misuse(
        op,
        site,
        "a shared-memory atomic used outside the block whose shared memory it is in (a reference kept past its \
         block)"
            .into(),
    )
}

/// The running launch's dynamic shared memory: `(shared address, bytes)` (address 0, the
/// launch's [`dynamic_shared_bytes`](crate::LaunchSpec::dynamic_shared_bytes)).
#[must_use]
#[track_caller]
pub fn dynamic_shared() -> (u32, u32) {
    (0, block_of(&current()).dyn_len.get())
}

/// The shared address of the static shared variable `key` (any number unique to the variable,
/// e.g. the address of its Rust `static`) of `size` bytes aligned to `align` (a power of two
/// ≤ 1024), placed in the running block's window the first time the block asks for it. Every
/// thread of the block gets the same address; other blocks get their own copy.
#[must_use]
#[track_caller]
pub fn shared_static(key: usize, size: usize, align: usize) -> u32 {
    let site = Location::caller();
    if !align.is_power_of_two() || align > BASE_ALIGN {
        ctx::misuse("shared_static", site, format!("alignment {align} is not a power of two ≤ {BASE_ALIGN}"));
    }
    let size = size.max(1);
    let c = current();
    let placed = if c.cluster.is_null() {
        block_of(&c).place((key, size, align))
    } else {
        // SAFETY: as in `cluster::table`: the launch's table outlives its threads.
        unsafe { &*c.cluster }.place_static((key, size, align), block_of(&c).dyn_len.get())
    };
    match placed {
        Some(off) => off,
        None => ctx::misuse(
            "shared_static",
            site,
            format!(
                "{size} more bytes of static shared memory exceed the {SHARED_CAPACITY} bytes a block has \
                 (dynamic shared memory included)"
            ),
        ),
    }
}

/// Reports an access to shared address `addr` of `size` bytes (`write` or read) for the race
/// check; nothing when the launch has no race check. Ends the launch with
/// [`CpuError::SharedRace`] when another thread of the block accessed one of those bytes since
/// the last barrier they both passed, and one of the two accesses writes.
#[track_caller]
pub fn shared_access(addr: u32, size: u32, write: bool) {
    let c = current();
    let block = block_of(&c);
    let mut race = block.race.borrow_mut();
    let Some(state) = race.as_mut() else { return };
    let site = Location::caller();
    for a in addr..addr.saturating_add(size) {
        if let Err((prev, prev_write)) = state.access(c.rank, a, write, site) {
            let tid = |r: u32| {
                let (x, y) = (c.bdim.x, c.bdim.y);
                crate::Dim3::new(r % x, (r / x) % y, r / (x * y))
            };
            drop(race);
            ctx::raise(CpuError::SharedRace {
                block: c.bid,
                addr: a,
                first: (tid(prev.rank), prev_write, prev.site),
                second: (c.tid(), write, site),
            });
        }
    }
}
