//! Allocations and the record of operations still pending on them (stream-ordered safety; the
//! rules are in [`crate::stream`]'s docs).
//!
//! Each allocation keeps a short list of *accesses*: a byte range, whether it was written, and
//! the stream (with the operation's sequence number) it was enqueued on. A new operation on
//! stream `S` over range `R` first makes `S` wait for every listed access that overlaps `R`, is
//! on another stream, is not known finished, and conflicts (either side writes); then, once
//! enqueued, it is listed itself. The list is pruned as it goes, keeping it a few entries long:
//!
//! - accesses known finished (their stream was synchronized past them) are dropped;
//! - a write over `R` drops every access inside `R`: a later operation that conflicts with one
//!   of them conflicts with the write too, and waiting for the write covers it (same stream:
//!   stream order; another stream: the write waited for it);
//! - a read over `R` drops earlier reads inside `R` on its own stream (stream order again).
//!
//! Waits are lazy: an access costs no CUDA call when it is listed. A stream that must wait for
//! stream `X` records `X`'s mark event *now* and waits for it, which covers the access and
//! whatever `X` ran before. The per-thread default stream is a different stream on every
//! thread, so its accesses record an event when they are listed instead.

use std::ops::Range;
use std::sync::{Arc, Mutex, MutexGuard};

use crate::backend::{EventH, StreamH};

use crate::device::{Doing, GpuInner};
use crate::error::{Error, Result};
use crate::stream::{Captured, Gate, StreamInner, StreamKind};

/// What an allocation is, for freeing it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum AllocKind {
    /// `cuMemAlloc`.
    Device,
    /// `cuMemHostAlloc` (page-locked, mapped).
    Pinned,
    /// Caller's memory made page-locked by `cuMemHostRegister` (unregistered by its scope).
    Registered,
    /// `cuMemAllocAsync` / `cuMemAllocFromPoolAsync`: device memory of a pool, allocated and
    /// freed in stream order ([`Alloc::ordered`]; see `crate::pool`).
    Pooled,
    /// `cuMemAllocManaged`: unified memory, one address for the host and the device (see
    /// `crate::managed`).
    Managed,
}

impl AllocKind {
    /// Device memory that only the GPU's operations touch (no host view): what a graph may
    /// capture and NCCL may use.
    pub(crate) fn device_only(self) -> bool {
        matches!(self, AllocKind::Device | AllocKind::Pooled)
    }
}

/// How a stream-ordered allocation ([`AllocKind::Pooled`]) is freed: with `cuMemFreeAsync` on
/// `stream` (the one it was allocated on), once that stream has been made to wait for every
/// operation of other streams still pending on the memory — so the pool never hands the
/// memory to a later allocation while an operation may still use it. Keeps the stream and the
/// pool alive until then.
pub(crate) struct OrderedFree {
    pub(crate) stream: Arc<StreamInner>,
    /// Held, not read: the pool outlives its allocations.
    pub(crate) _pool: Option<Arc<crate::pool::PoolInner>>,
}

/// One allocation: device memory, pinned or registered host memory.
pub(crate) struct Alloc {
    /// Device address (for host memory, its mapping in the device's address space).
    pub(crate) ptr: u64,
    /// Host address for host memory, null for device memory.
    pub(crate) host: *mut u8,
    pub(crate) kind: AllocKind,
    pub(crate) gpu: Arc<GpuInner>,
    tracker: Mutex<Vec<Access>>,
    /// For [`AllocKind::Pooled`]: where its free is ordered.
    pub(crate) ordered: Option<OrderedFree>,
    /// What must live as long as the operations recorded here: dropped after `drop` has waited
    /// for them (a field is dropped after its struct's `drop` returns). A loaded module's
    /// record keeps the module loaded this way (`crate::module`).
    keep: Option<Box<dyn Send + Sync>>,
}

// SAFETY: the raw host pointer is only dereferenced by the owning buffer types, through
// borrows that the tracker has made safe (the GPU is done with the range); the rest is `Sync`.
unsafe impl Send for Alloc {}
// SAFETY: as above.
unsafe impl Sync for Alloc {}

impl Alloc {
    pub(crate) fn new(gpu: &Arc<GpuInner>, ptr: u64, host: *mut u8, kind: AllocKind) -> Self {
        Self { ptr, host, kind, gpu: gpu.clone(), tracker: Mutex::new(Vec::new()), ordered: None, keep: None }
    }

    /// The same, keeping `keep` alive until every operation recorded on it has finished (and
    /// the last handle is gone).
    pub(crate) fn keeping(mut self, keep: Box<dyn Send + Sync>) -> Self {
        self.keep = Some(keep);
        self
    }

    /// Whether this is a record that keeps something alive (a loaded module's) rather than
    /// memory.
    pub(crate) fn is_keeper(&self) -> bool {
        self.keep.is_some()
    }

    fn lock(&self) -> MutexGuard<'_, Vec<Access>> {
        self.tracker.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Waits on the host until no pending operation conflicts with the host reading
    /// (`write == false`) or writing `range`, then runs `f` with the record still locked (so
    /// that no operation on the range is enqueued meanwhile).
    ///
    /// `what` names the host access in errors ("copying device memory to the host"): a kernel
    /// failure seen while waiting is reported as refusing it.
    pub(crate) fn host_access<R>(
        &self,
        range: Range<usize>,
        write: bool,
        what: &'static str,
        f: impl FnOnce() -> Result<R>,
    ) -> Result<R> {
        if crate::stream::in_host_fn() {
            return Err(crate::stream::host_fn_error(what));
        }
        let mut accesses = self.lock();
        wait_host(&mut accesses, &range, write, what)?;
        // Waiting may have bound another context (a stream of another GPU used this memory).
        self.gpu.bind()?;
        f()
    }

    /// Accesses listed now (for tests).
    pub(crate) fn pending(&self) -> usize {
        self.lock().len()
    }
}

impl Drop for Alloc {
    fn drop(&mut self) {
        if crate::stream::in_host_fn() {
            // No CUDA call is allowed here, and waiting could deadlock: leak the memory.
            return;
        }
        let accesses = self.tracker.get_mut().unwrap_or_else(|p| p.into_inner());
        if self.kind == AllocKind::Pooled && self.ptr != 0 {
            free_in_stream_order(self.ptr, self.ordered.as_ref(), accesses);
            return;
        }
        // Wait for every operation still using the memory before freeing it. If waiting fails
        // (a kernel failed: the context is lost), the memory is not freed: nothing can run
        // any more, and the driver may still be using it. An aborted collective is no such
        // failure: its stream ran past it, and nothing uses the memory any more.
        let waited = wait_host(accesses, &(0..usize::MAX), true, "freeing memory");
        if matches!(waited, Err(ref e) if !matches!(e, Error::CollectiveAborted(_))) || self.gpu.bind().is_err() {
            return;
        }
        // SAFETY: ours, and no operation uses it any more (waited above).
        unsafe {
            match self.kind {
                AllocKind::Device | AllocKind::Managed if self.ptr != 0 => {
                    let _ = self.gpu.backend.free(self.ptr);
                }
                AllocKind::Pinned if !self.host.is_null() => {
                    let _ = self.gpu.backend.free_host(self.host);
                }
                _ => {}
            }
        }
    }
}

/// Frees stream-ordered memory at `ptr` ([`AllocKind::Pooled`]): makes its stream wait, on
/// the GPU, for every pending access of another stream (the accesses of its own stream come
/// before the free in stream order; those dropped from the record are covered by the ones
/// kept, as for any wait), then `cuMemFreeAsync` on that stream. No host wait: the pool reuses
/// the memory only for allocations ordered after the free.
///
/// If the stream is capturing a graph (its own capture, or another stream's that it joined),
/// a free enqueued there would become a node of the graph: instead the host waits for every
/// pending access and frees on the legacy default stream. If anything fails (a lost
/// context), the memory is leaked, never freed early.
fn free_in_stream_order(ptr: u64, ordered: Option<&OrderedFree>, accesses: &mut Vec<Access>) {
    let Some(OrderedFree { stream, .. }) = ordered else { return };
    if stream.gpu.bind().is_err() {
        return;
    }
    let ordered_on_stream = || -> Result<()> {
        let key = stream.key();
        let mut waited: Vec<u64> = Vec::new();
        for a in accesses.iter() {
            if a.key == key || a.done() || waited.contains(&a.key) {
                continue;
            }
            match &a.pending {
                Pending::Stream(s, _) => {
                    s.make_wait(stream)?;
                    waited.push(a.key);
                }
                Pending::Event(m) => m.make_wait(stream)?,
            }
        }
        Ok(())
    };
    if !crate::pool::capturing(stream) && ordered_on_stream().is_ok() && stream.gpu.bind().is_ok() {
        // SAFETY: ours; every operation that may use it is ordered before this point of
        // `stream` (waited for above, or earlier on `stream` itself).
        if unsafe { stream.gpu.backend.free_async(ptr, stream.raw) }.is_ok() {
            return;
        }
    }
    // The fallback: nothing pending any more, so the stream the free is enqueued on does not
    // matter (the legacy default stream cannot capture).
    if wait_host(accesses, &(0..usize::MAX), true, "freeing memory").is_err() || stream.gpu.bind().is_err() {
        return;
    }
    // SAFETY: ours; no operation uses it any more (waited above).
    unsafe {
        let _ = stream.gpu.backend.free_async(ptr, StreamH::LEGACY);
    }
}

/// Lists a stream-ordered allocation just enqueued on `stream` as a write of all of its
/// `bytes`: an operation of another stream (or the host) that uses the memory then waits for
/// the allocation first, as it would for a kernel that wrote it.
pub(crate) fn record_allocation(stream: &Arc<StreamInner>, alloc: &Alloc, bytes: usize) -> Result<()> {
    let u = Use { alloc, owner: None, start: 0, end: bytes, write: true, shared: false, foreign: None };
    let mut guards: [Option<Guard<'_>>; 1] = [Some((std::ptr::from_ref(alloc), alloc.lock()))];
    record(stream, std::iter::once((&u, 0)), &mut guards, false)
}

/// Where an access's operation runs, to wait for it.
enum Pending {
    /// Operation `seq` of a stream.
    Stream(Arc<StreamInner>, u64),
    /// An event recorded right after the operation (per-thread default stream).
    Event(Arc<Mark>),
}

struct Access {
    range: Range<usize>,
    write: bool,
    /// The stream it ran on ([`StreamInner::key`]).
    key: u64,
    pending: Pending,
}

impl Access {
    fn done(&self) -> bool {
        match &self.pending {
            Pending::Stream(s, seq) => s.is_done(*seq),
            Pending::Event(_) => false,
        }
    }
    fn conflicts(&self, range: &Range<usize>, write: bool) -> bool {
        (self.write || write) && self.range.start < range.end && range.start < self.range.end
    }
}

/// An event owned by an access.
pub(crate) struct Mark {
    raw: EventH,
    gpu: Arc<GpuInner>,
}

impl Mark {
    pub(crate) fn record(stream: &StreamInner) -> Result<Self> {
        let gpu = &stream.gpu;
        // The context is current (the caller enqueued work on it just now).
        let raw = gpu.backend.create_event(false).map_err(gpu.failed("creating an event"))?;
        // SAFETY: a live event and stream of this context.
        unsafe {
            if let Err(f) = gpu.backend.record_event(raw, stream.raw) {
                let _ = gpu.backend.destroy_event(raw);
                return Err(gpu.fail(f, Doing::Call("recording an event".into())));
            }
        }
        Ok(Self { raw, gpu: gpu.clone() })
    }
}

impl Mark {
    /// Whether the work before the mark has finished (`false` also when the query fails: a
    /// lost context never finishes).
    pub(crate) fn is_done(&self) -> bool {
        // Queries need no current context; the event's own device answers.
        // SAFETY: live event of this device.
        matches!(unsafe { self.gpu.backend.event_query(self.raw) }, Ok(true))
    }

    /// Waits on the host for the work before the mark.
    pub(crate) fn wait(&self, what: &'static str) -> Result<()> {
        self.gpu.bind()?;
        // SAFETY: live event.
        unsafe { self.gpu.backend.event_synchronize(self.raw) }.map_err(|f| self.gpu.fail(f, Doing::Call(what.into())))
    }

    /// Makes `stream` wait (on the GPU) for the work before the mark; the stream may be of
    /// another context.
    pub(crate) fn make_wait(&self, stream: &StreamInner) -> Result<()> {
        // The consumer's device enqueues the wait; the event must be of the same kind.
        crate::peer::require_same_kind(
            || "ordering a stream after another".into(),
            &stream.gpu,
            &self.gpu,
            "the tracker never orders them",
        )?;
        // SAFETY: live event and stream of devices of one kind (a stream may wait for another
        // context's event); the event was recorded on a stream that cannot capture (the
        // per-thread default stream) or outside any capture (multi-grid launches).
        unsafe { stream.gpu.backend.stream_wait_event(stream.raw, self.raw) }
            .map_err(stream.gpu.failed("ordering a stream after another"))
    }
}

impl Drop for Mark {
    fn drop(&mut self) {
        if self.gpu.bind().is_ok() {
            // SAFETY: ours; not used after.
            unsafe {
                let _ = self.gpu.backend.destroy_event(self.raw);
            }
        }
    }
}

/// Waits on the host for the accesses that conflict with a host access to `range`, and
/// forgets them. An access whose stream reports an aborted collective
/// ([`Error::CollectiveAborted`]) is kept (later host accesses report it again, until an
/// operation overwrites the range) and the others are still waited for; the error is returned
/// after them.
fn wait_host(accesses: &mut Vec<Access>, range: &Range<usize>, write: bool, what: &'static str) -> Result<()> {
    let mut aborted = None;
    let mut i = 0;
    while i < accesses.len() {
        let a = &accesses[i];
        if a.done() {
            accesses.swap_remove(i);
            continue;
        }
        if a.conflicts(range, write) {
            match &a.pending {
                Pending::Stream(s, seq) => match s.wait_host(*seq, what) {
                    Ok(()) => {}
                    Err(e @ Error::CollectiveAborted(_)) => {
                        aborted.get_or_insert(e);
                        i += 1;
                        continue;
                    }
                    Err(e) => return Err(e),
                },
                Pending::Event(m) => {
                    m.gpu.bind()?;
                    // SAFETY: live event.
                    unsafe { m.gpu.backend.event_synchronize(m.raw) }
                        .map_err(|f| m.gpu.fail(f, Doing::Call(what.into())))?;
                }
            }
            accesses.swap_remove(i);
            continue;
        }
        i += 1;
    }
    aborted.map_or(Ok(()), Err)
}

/// One operand of an operation: a byte range of an allocation, read or written.
///
/// Made by the argument traits ([`SliceArg`](crate::SliceArg), …); generated launchers pass
/// them to the launch, which orders it against other streams and records it.
#[doc(hidden)]
#[derive(Clone, Copy)]
pub struct Use<'a> {
    pub(crate) alloc: &'a Alloc,
    /// The allocation itself, when the operation may be captured into a graph (which keeps it).
    pub(crate) owner: Option<&'a Arc<Alloc>>,
    pub(crate) start: usize,
    pub(crate) end: usize,
    pub(crate) write: bool,
    /// Written by every grid of a multi-grid launch under the phase discipline of a
    /// `MultiGridVec` (so not a conflict between those grids).
    pub(crate) shared: bool,
    /// Memory another library owns (a cudarc `CudaSlice`, [`crate::interop`]): ordered by that
    /// library's own record around the operation, not by this module's; `alloc` is then a
    /// placeholder that nothing locks or records ([`run_tracked_in`] hands such operations to
    /// `interop::run_foreign` first), and the range is empty.
    pub(crate) foreign: Option<&'a dyn crate::interop::Foreign>,
}

impl<'a> Use<'a> {
    pub(crate) fn new(owner: &'a Arc<Alloc>, range: Range<usize>, write: bool) -> Self {
        Self {
            alloc: owner,
            owner: Some(owner),
            start: range.start,
            end: range.end,
            write,
            shared: false,
            foreign: None,
        }
    }
    /// The operand of memory cudarc owns ([`crate::interop`]).
    pub(crate) fn foreign(f: &'a dyn crate::interop::Foreign, write: bool) -> Self {
        let alloc = crate::interop::placeholder();
        Self { alloc, owner: None, start: 0, end: 0, write, shared: false, foreign: Some(f) }
    }
    pub(crate) fn captured(c: &'a Captured) -> Self {
        Self::new(&c.alloc, c.start..c.end, c.write)
    }
    /// The device address of the first byte.
    pub(crate) fn device_addr(&self) -> u64 {
        self.alloc.ptr + self.start as u64
    }
    /// Memory a memset may fill: device, pool or managed memory (not pinned or registered).
    pub(crate) fn is_device(&self) -> bool {
        matches!(self.alloc.kind, AllocKind::Device | AllocKind::Pooled | AllocKind::Managed)
    }
}

/// Runs `op` (which enqueues work on `stream` that uses `uses`) in stream order: first makes
/// `stream` wait for the conflicting work of other streams, then records the operation. The
/// stream's [`Gate`] and the allocations' records stay locked throughout, so the operation is
/// ordered atomically against operations issued from other threads, and the stream does not
/// enter or leave a capture meanwhile.
///
/// While `stream` is in a capture (begun on it or joined), nothing waits and nothing is
/// recorded: the uses are kept for the graph (whose replays are ordered in their turn); host
/// memory is refused; so is an operation from another thread than the capturing one.
#[inline]
pub(crate) fn run_tracked<R>(stream: &Arc<StreamInner>, uses: &[Use<'_>], op: impl FnOnce() -> Result<R>) -> Result<R> {
    if crate::stream::in_host_fn() {
        return Err(crate::stream::host_fn_error("enqueueing work"));
    }
    let gate = stream.gate("enqueueing work")?;
    run_tracked_in(stream, &gate, uses, op)
}

/// [`run_tracked`] under a [`Gate`] of `stream` the caller holds.
pub(crate) fn run_tracked_in<R>(
    stream: &Arc<StreamInner>,
    gate: &Gate<'_>,
    uses: &[Use<'_>],
    op: impl FnOnce() -> Result<R>,
) -> Result<R> {
    if crate::stream::in_host_fn() {
        return Err(crate::stream::host_fn_error("enqueueing work"));
    }
    // cudarc's memory is ordered by cudarc's record, around the operation (`crate::interop`);
    // the rest comes back here without it.
    if uses.iter().any(|u| u.foreign.is_some()) {
        // Through `dyn` (the diverted operation comes back here, with another closure type).
        let (mut op, mut out) = (Some(op), None);
        crate::interop::run_foreign(stream, gate, uses, &mut || {
            out = op.take().map(|op| op()).transpose()?;
            Ok(())
        })?;
        return out.ok_or_else(|| Error::Argument("an operation on cudarc memory did not run".into()));
    }
    // Memory of the CPU device never meets a GPU's stream, nor the reverse, whatever the
    // operation (its own checks say more: contexts, peer access). A pointer compare each.
    let kind = stream.gpu.kind();
    for u in uses {
        if u.alloc.gpu.kind() != kind {
            return Err(Error::cross_device(
                "enqueueing work",
                &stream.gpu,
                &u.alloc.gpu,
                "memory of the CPU device and of a GPU never mix: copy through host memory (to_vec, copy_from)",
            ));
        }
    }
    if let Some(capture) = gate.capture() {
        capture.keep(uses)?;
        return op();
    }
    // Lock each allocation once, in address order (no deadlock between two launches that
    // lock the same ones). Up to 8 operands without a heap allocation.
    const INLINE: usize = 8;
    let mut order_inline = [0usize; INLINE];
    let mut order_heap = Vec::new();
    let order: &mut [usize] = if uses.len() <= INLINE {
        &mut order_inline[..uses.len()]
    } else {
        order_heap.resize(uses.len(), 0);
        &mut order_heap
    };
    for (i, o) in order.iter_mut().enumerate() {
        *o = i;
    }
    order.sort_unstable_by_key(|&i| std::ptr::from_ref(uses[i].alloc) as usize);
    let mut inline: [Option<Guard<'_>>; INLINE] = Default::default();
    let mut heap: Vec<Option<Guard<'_>>> = Vec::new();
    let guards: &mut [Option<Guard<'_>>] = if uses.len() <= INLINE {
        &mut inline[..]
    } else {
        heap.resize_with(uses.len(), || None);
        &mut heap
    };
    let mut locked = 0;
    for &i in order.iter() {
        let a = std::ptr::from_ref(uses[i].alloc);
        if locked == 0 || guards[locked - 1].as_ref().is_some_and(|g| g.0 != a) {
            guards[locked] = Some((a, uses[i].alloc.lock()));
            locked += 1;
        }
    }
    let guards = &mut guards[..locked];
    // Which guard each operand's allocation is under.
    let mut pos_inline = [0usize; INLINE];
    let mut pos_heap = Vec::new();
    let positions: &mut [usize] = if uses.len() <= INLINE {
        &mut pos_inline[..uses.len()]
    } else {
        pos_heap.resize(uses.len(), 0);
        &mut pos_heap
    };
    for (p, u) in positions.iter_mut().zip(uses) {
        let a = std::ptr::from_ref(u.alloc);
        *p = guards.iter().position(|g| g.as_ref().is_some_and(|g| g.0 == a)).unwrap_or(0);
    }
    // Wait for conflicting work on other streams, once per stream.
    let key = stream.key();
    let mut waited = [0u64; INLINE];
    let mut n_waited = 0;
    for (i, u) in uses.iter().enumerate() {
        let g = positions[i];
        let list = &guards[g].as_ref().expect("locked above").1;
        for a in list.iter() {
            if a.key == key
                || !a.conflicts(&(u.start..u.end), u.write)
                || a.done()
                || waited[..n_waited].contains(&a.key)
            {
                continue;
            }
            match &a.pending {
                Pending::Stream(s, _) => {
                    // The mark recorded now covers everything on `s`: no need to wait for it again.
                    s.make_wait(stream)?;
                    if n_waited < INLINE {
                        waited[n_waited] = a.key;
                        n_waited += 1;
                    }
                }
                Pending::Event(m) => m.make_wait(stream)?,
            }
        }
    }
    let r = op()?;
    record(stream, uses.iter().zip(positions.iter()).map(|(u, &g)| (u, g)), guards, true)?;
    Ok(r)
}

/// An allocation's record, locked, with the allocation it belongs to.
type Guard<'g> = (*const Alloc, MutexGuard<'g, Vec<Access>>);

/// Lists `uses` (each with the index of the guard of its allocation) as accesses of the
/// operation just enqueued on `stream`; `prune` drops the accesses the new ones cover (see the
/// module docs), which only holds when the operation waited for them.
fn record<'u, 'g: 'u>(
    stream: &Arc<StreamInner>,
    uses: impl Iterator<Item = (&'u Use<'u>, usize)>,
    guards: &mut [Option<Guard<'g>>],
    prune: bool,
) -> Result<()> {
    let key = stream.key();
    let seq = stream.next_seq();
    let mark = match stream.kind {
        StreamKind::PerThread => Some(Arc::new(Mark::record(stream)?)),
        _ => None,
    };
    let me = || match &mark {
        Some(m) => Pending::Event(m.clone()),
        None => Pending::Stream(stream.clone(), seq),
    };
    for (u, g) in uses {
        let list = &mut guards[g].as_mut().expect("locked above").1;
        let range = u.start..u.end;
        list.retain(|a| {
            let inside = range.start <= a.range.start && a.range.end <= range.end;
            !(a.done() || prune && inside && (u.write || a.key == key && !a.write))
        });
        list.push(Access { range, write: u.write, key, pending: me() });
    }
    Ok(())
}

/// [`run_tracked`] for the grids of a multi-grid launch: `parts[i]` is a stream and the
/// operands of the operation `op` enqueues on it. Every allocation is locked once for the
/// whole launch; each stream first waits for the conflicting work other streams enqueued
/// *before* this call (the parts never wait for one another: their grids must run at once);
/// then `op` enqueues, returning how many parts (in order) it enqueued and whether it failed;
/// the enqueued parts are recorded without pruning (they did not wait for one another).
///
/// The caller holds `gates`, the [`Gate`]s of the parts' streams ([`gates_outside_capture`]).
pub(crate) fn run_tracked_multi(
    parts: &[(&Arc<StreamInner>, &[Use<'_>])],
    gates: &Gates<'_>,
    op: impl FnOnce() -> (usize, Result<()>),
) -> Result<()> {
    if crate::stream::in_host_fn() {
        return Err(crate::stream::host_fn_error("enqueueing work"));
    }
    debug_assert!(parts.iter().all(|(s, _)| gates.holds(s)));
    for (stream, uses) in parts {
        let kind = stream.gpu.kind();
        if let Some(u) = uses.iter().find(|u| u.alloc.gpu.kind() != kind) {
            return Err(Error::cross_device(
                "enqueueing work",
                &stream.gpu,
                &u.alloc.gpu,
                "memory of the CPU device and of a GPU never mix",
            ));
        }
    }
    let mut allocs: Vec<&Alloc> = parts.iter().flat_map(|(_, uses)| uses.iter().map(|u| u.alloc)).collect();
    allocs.sort_unstable_by_key(|a| std::ptr::from_ref(*a) as usize);
    allocs.dedup_by_key(|a| std::ptr::from_ref(*a) as usize);
    let mut guards: Vec<Option<Guard<'_>>> = allocs.iter().map(|a| Some((std::ptr::from_ref(*a), a.lock()))).collect();
    let position = |u: &Use<'_>| allocs.iter().position(|a| std::ptr::eq(*a, u.alloc)).unwrap_or(0);
    for (stream, uses) in parts {
        stream.gpu.bind()?;
        let key = stream.key();
        let mut waited: Vec<u64> = Vec::new();
        for u in uses.iter() {
            let list = &guards[position(u)].as_ref().expect("locked above").1;
            for a in list.iter() {
                if a.key == key || !a.conflicts(&(u.start..u.end), u.write) || a.done() || waited.contains(&a.key) {
                    continue;
                }
                match &a.pending {
                    Pending::Stream(s, _) => {
                        s.make_wait(stream)?;
                        waited.push(a.key);
                    }
                    Pending::Event(m) => m.make_wait(stream)?,
                }
            }
        }
    }
    let (enqueued, result) = op();
    for (stream, uses) in &parts[..enqueued.min(parts.len())] {
        record(stream, uses.iter().map(|u| (u, position(u))), &mut guards, false)?;
    }
    result
}

/// The [`Gate`]s of several streams, none of them in a capture: taken once each, in address
/// order (two threads taking the gates of the same streams never wait for each other).
pub(crate) struct Gates<'s> {
    held: Vec<(*const StreamInner, Gate<'s>)>,
}

impl<'s> Gates<'s> {
    /// Takes the gates of `streams` (each once) for `what`.
    pub(crate) fn take(streams: impl IntoIterator<Item = &'s StreamInner>, what: &str) -> Result<Self> {
        let mut all: Vec<&'s StreamInner> = streams.into_iter().collect();
        all.sort_unstable_by_key(|s| std::ptr::from_ref(*s) as usize);
        all.dedup_by_key(|s| std::ptr::from_ref(*s) as usize);
        let mut held = Vec::with_capacity(all.len());
        for s in all {
            held.push((std::ptr::from_ref(s), s.gate(what)?));
        }
        Ok(Self { held })
    }

    /// The gate of `s`, if held.
    pub(crate) fn get(&self, s: &StreamInner) -> Option<&Gate<'s>> {
        self.held.iter().find(|(p, _)| std::ptr::eq(*p, s)).map(|(_, g)| g)
    }

    fn holds(&self, s: &StreamInner) -> bool {
        self.get(s).is_some()
    }

    /// Every gate held.
    pub(crate) fn all(&self) -> impl Iterator<Item = &Gate<'s>> {
        self.held.iter().map(|(_, g)| g)
    }
}

/// Takes the gates of `streams` (each once) for `what`, an operation that cannot be captured
/// into a graph: [`Error::Argument`] if one of them is in a capture (`refusal` says why).
pub(crate) fn gates_outside_capture<'s>(
    streams: impl IntoIterator<Item = &'s StreamInner>,
    what: &str,
    refusal: &str,
) -> Result<Gates<'s>> {
    let gates = Gates::take(streams, what)?;
    if gates.all().any(|g| g.capture().is_some()) {
        return Err(Error::Argument(format!("{what}: {refusal}")));
    }
    Ok(gates)
}

/// A source of [`Stream::copy`](crate::Stream::copy): device or pinned host memory, read.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be the source of an asynchronous copy of `{T}`",
    note = "pass `&DeviceBuffer<T>`, `buffer.slice(..)`, `&PinnedBuffer<T>`, `pinned.slice(..)`; for a `&[T]` or \
            `Vec<T>`, stage it in a `PinnedBuffer` or use the synchronous `DeviceBuffer::copy_from`"
)]
pub trait CopySrc<T> {
    #[doc(hidden)]
    fn use_read(&self) -> Use<'_>;
}

/// A destination of [`Stream::copy`](crate::Stream::copy) and fills: device or pinned host
/// memory, written.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be the destination of an asynchronous copy of `{T}`",
    note = "pass `&mut DeviceBuffer<T>`, `buffer.slice_mut(..)`, `&mut PinnedBuffer<T>`, `pinned.slice_mut(..)`"
)]
pub trait CopyDst<T> {
    #[doc(hidden)]
    fn use_write(&self) -> Use<'_>;
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Host cost of the tracker around an operation (no driver call in the operation): run with
    /// `cargo test --release -p cohort-runtime --lib track::tests::tracked_op_cost -- --ignored --nocapture`.
    #[test]
    #[ignore = "a timing, not a check"]
    fn tracked_op_cost() {
        let gpu = crate::Gpu::cpu().unwrap();
        let s = gpu.new_stream().unwrap();
        let a = gpu.zeroed::<u32>(256).unwrap();
        let mut b = gpu.zeroed::<u32>(256).unwrap();
        let n = 2_000_000;
        for round in 0..3 {
            let t = std::time::Instant::now();
            for _ in 0..n {
                let uses = [crate::memory::buffer_use(&a, false), crate::memory::buffer_use(&b, true)];
                run_tracked(&s.inner, &uses, || Ok(())).unwrap();
            }
            let per = t.elapsed().as_nanos() as f64 / n as f64;
            println!("round {round}: {per:.1} ns per tracked operation with 2 operands");
        }
        b.fill_zero().unwrap();
    }
}
