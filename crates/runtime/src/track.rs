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

use cudarc::driver::sys;

use crate::device::{Doing, GpuInner};
use crate::error::{Error, Result};
use crate::stream::{Captured, StreamInner, StreamKind};

/// What an allocation is, for freeing it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum AllocKind {
    /// `cuMemAlloc`.
    Device,
    /// `cuMemHostAlloc` (page-locked, mapped).
    Pinned,
    /// Caller's memory made page-locked by `cuMemHostRegister` (unregistered by its scope).
    Registered,
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
}

// SAFETY: the raw host pointer is only dereferenced by the owning buffer types, through
// borrows that the tracker has made safe (the GPU is done with the range); the rest is `Sync`.
unsafe impl Send for Alloc {}
// SAFETY: as above.
unsafe impl Sync for Alloc {}

impl Alloc {
    pub(crate) fn new(gpu: &Arc<GpuInner>, ptr: u64, host: *mut u8, kind: AllocKind) -> Self {
        Self { ptr, host, kind, gpu: gpu.clone(), tracker: Mutex::new(Vec::new()) }
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
                AllocKind::Device if self.ptr != 0 => {
                    let _ = crate::drv::cuMemFree_v2(self.ptr);
                }
                AllocKind::Pinned if !self.host.is_null() => {
                    let _ = crate::drv::cuMemFreeHost(self.host.cast());
                }
                _ => {}
            }
        }
    }
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
    raw: sys::CUevent,
    gpu: Arc<GpuInner>,
}

// SAFETY: event handles may be used from any thread.
unsafe impl Send for Mark {}
// SAFETY: as above.
unsafe impl Sync for Mark {}

impl Mark {
    pub(crate) fn record(stream: &StreamInner) -> Result<Self> {
        let gpu = &stream.gpu;
        let mut raw = std::ptr::null_mut();
        // SAFETY: the context is current (the caller enqueued work on it just now).
        unsafe {
            crate::drv::cuEventCreate(&mut raw, sys::CUevent_flags::CU_EVENT_DISABLE_TIMING as u32)
                .result()
                .map_err(|code| gpu.error(code, Doing::Call("creating an event".into())))?;
            if let Err(code) = crate::drv::cuEventRecord(raw, stream.raw).result() {
                let _ = crate::drv::cuEventDestroy_v2(raw);
                return Err(gpu.error(code, Doing::Call("recording an event".into())));
            }
        }
        Ok(Self { raw, gpu: gpu.clone() })
    }
}

impl Mark {
    /// Whether the work before the mark has finished (`false` also when the query fails: a
    /// lost context never finishes).
    pub(crate) fn is_done(&self) -> bool {
        // Queries need no current context, but the driver seam must send this one to the
        // event's device: the calling thread may last have used the other kind (a GPU event
        // would otherwise be asked of the CPU device, which answers "done").
        crate::cpu::set_current(self.gpu.is_cpu());
        // SAFETY: live event of the device just selected.
        matches!(unsafe { crate::drv::cuEventQuery(self.raw) }, sys::CUresult::CUDA_SUCCESS)
    }

    /// Waits on the host for the work before the mark.
    pub(crate) fn wait(&self, what: &'static str) -> Result<()> {
        self.gpu.bind()?;
        // SAFETY: live event.
        unsafe { crate::drv::cuEventSynchronize(self.raw) }
            .result()
            .map_err(|code| self.gpu.error(code, Doing::Call(what.into())))
    }

    /// Makes `stream` wait (on the GPU) for the work before the mark; the stream may be of
    /// another context.
    pub(crate) fn make_wait(&self, stream: &StreamInner) -> Result<()> {
        // The consumer's device decides (launches never mix the CPU device and a GPU).
        crate::cpu::set_current(stream.gpu.is_cpu());
        // SAFETY: live event and stream (a stream may wait for another context's event).
        unsafe { crate::drv::cuStreamWaitEvent(stream.raw, self.raw, 0) }
            .result()
            .map_err(|code| stream.gpu.error(code, Doing::Call("ordering a stream after another".into())))
    }
}

impl Drop for Mark {
    fn drop(&mut self) {
        if self.gpu.bind().is_ok() {
            // SAFETY: ours; not used after.
            unsafe {
                let _ = crate::drv::cuEventDestroy_v2(self.raw);
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
                    unsafe { crate::drv::cuEventSynchronize(m.raw) }
                        .result()
                        .map_err(|code| m.gpu.error(code, Doing::Call(what.into())))?;
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
}

impl<'a> Use<'a> {
    pub(crate) fn new(owner: &'a Arc<Alloc>, range: Range<usize>, write: bool) -> Self {
        Self { alloc: owner, owner: Some(owner), start: range.start, end: range.end, write, shared: false }
    }
    pub(crate) fn captured(c: &'a Captured) -> Self {
        Self::new(&c.alloc, c.start..c.end, c.write)
    }
    /// The device address of the first byte.
    pub(crate) fn device_addr(&self) -> u64 {
        self.alloc.ptr + self.start as u64
    }
    pub(crate) fn is_device(&self) -> bool {
        self.alloc.kind == AllocKind::Device
    }
}

/// Runs `op` (which enqueues work on `stream` that uses `uses`) in stream order: first makes
/// `stream` wait for the conflicting work of other streams, then records the operation. The
/// allocations' records stay locked throughout, so the operation is ordered atomically
/// against operations issued from other threads.
///
/// While `stream` is capturing, nothing waits and nothing is recorded: the uses are kept for
/// the graph (whose replays are ordered in their turn); host memory is refused.
pub(crate) fn run_tracked<R>(stream: &Arc<StreamInner>, uses: &[Use<'_>], op: impl FnOnce() -> Result<R>) -> Result<R> {
    if crate::stream::in_host_fn() {
        return Err(crate::stream::host_fn_error("enqueueing work"));
    }
    {
        let mut cap = stream.capture.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(list) = cap.as_mut() {
            for u in uses {
                match (u.alloc.kind, u.owner) {
                    (AllocKind::Device, Some(owner)) => {
                        list.push(Captured { alloc: owner.clone(), start: u.start, end: u.end, write: u.write });
                    }
                    _ => {
                        return Err(Error::Argument(
                            "pinned or registered host memory cannot be captured into a graph: the host could use it \
                             while a replay runs; copy through device memory, or replay without a graph"
                                .into(),
                        ));
                    }
                }
            }
            drop(cap);
            return op();
        }
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
                Pending::Event(m) => {
                    // SAFETY: live event and stream (of one context, or of two: a stream may
                    // wait for another device's event).
                    unsafe { crate::drv::cuStreamWaitEvent(stream.raw, m.raw, 0) }.result().map_err(|code| {
                        stream.gpu.error(code, Doing::Call("ordering a stream after another".into()))
                    })?;
                }
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
pub(crate) fn run_tracked_multi(
    parts: &[(&Arc<StreamInner>, &[Use<'_>])],
    op: impl FnOnce() -> (usize, Result<()>),
) -> Result<()> {
    if crate::stream::in_host_fn() {
        return Err(crate::stream::host_fn_error("enqueueing work"));
    }
    for (stream, _) in parts {
        if stream.capture.lock().unwrap_or_else(|p| p.into_inner()).is_some() {
            return Err(Error::Argument(
                "a multi-grid launch cannot be captured into a graph: its grids must start together on every GPU"
                    .into(),
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
