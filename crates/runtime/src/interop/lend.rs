//! Cohort memory lent to cudarc: the machinery under `DeviceBuffer::with_cudarc` and
//! `with_cudarc_mut` (and the views' own, in `mod.rs`, the types' public API): a `CudaView` of
//! the buffer for the length of a closure, ordered with Cohort's work on entry and recorded as
//! one Cohort operation on return.

use std::mem::ManuallyDrop;
use std::sync::Arc;

use cudarc::driver::{CudaEvent, CudaSlice, CudaStream, DevicePtr, DevicePtrMut};

use super::cudarc_handle;
use super::foreign::event_of;
use crate::device::Doing;
use crate::error::{Error, Result};
use crate::stream::{Stream, StreamInner};
use crate::track::{AllocKind, Use, run_tracked_in};
use cohort::DeviceCopy;

/// Keeps the context of `cs` in cudarc's multi-stream mode while the stream lives (see
/// [`StreamLink::multi`]); cudarc synchronizes the context when it enters the mode, once.
fn keep_multi_stream(s: &StreamInner, cs: &CudaStream) -> Result<()> {
    if s.interop.multi.get().is_none() {
        let ctx = cs.context();
        let multi = ctx.new_stream().map_err(|code| {
            s.gpu.error(code, Doing::Call("making a cudarc stream (for cudarc's multi-stream mode)".into()))
        })?;
        let _ = s.interop.multi.set(multi);
    }
    Ok(())
}

/// Runs `each` on the read and the write event of a slice Cohort lends (none when its context
/// does not track events), obtained through cudarc's access protocol on `cs` (whose own waits,
/// if any, are for these events), the records forgotten.
fn lent_events<T>(
    slice: &mut CudaSlice<T>,
    cs: &CudaStream,
    mut each: impl FnMut(&CudaEvent) -> std::result::Result<(), cudarc::driver::DriverError>,
) -> std::result::Result<(), cudarc::driver::DriverError> {
    if let Some(read) = event_of(DevicePtr::device_ptr(&*slice, cs).1) {
        each(read)?;
    }
    if let Some(write) = event_of(slice.device_ptr_mut(cs).1) {
        each(write)?;
    }
    cs.context().check_err()
}

/// The entry or exit of a lending scope: `u` as an operation on the stream (it waits for
/// Cohort's conflicting work, and is recorded: at the exit, after everything cudarc enqueued).
fn enter_or_leave(s: &Arc<StreamInner>, u: Use<'_>, what: &str) -> Result<()> {
    let gate = s.gate(what)?;
    if gate.capture().is_some() {
        return Err(Error::Argument(format!(
            "{what}: the stream is in a graph capture (Stream::capture), whose graph would not keep cudarc's work on \
             the memory in order; lend it outside the capture"
        )));
    }
    run_tracked_in(s, &gate, &[u], || Ok(()))
}

/// A slice lent to cudarc: given back (never freed) once, by [`Lent::give_back`] or when
/// dropped (a panic in the scope).
struct Lent<'a, T> {
    slice: ManuallyDrop<CudaSlice<T>>,
    stream: &'a Arc<StreamInner>,
    cs: &'a Arc<CudaStream>,
    u: Use<'a>,
    what: &'static str,
    done: bool,
}

impl<T> Lent<'_, T> {
    /// The exit: the stream waits for cudarc's record of the slice (work cudarc enqueued on
    /// other streams), the slice is leaked back (cudarc frees nothing), and the scope is recorded
    /// as one Cohort operation on the stream. If that fails, the whole context is waited for
    /// (best effort) before the error is returned.
    fn give_back(&mut self) -> Result<()> {
        if std::mem::replace(&mut self.done, true) {
            return Ok(());
        }
        let cs = self.cs;
        let waited = lent_events(&mut self.slice, cs, |event| cs.wait(event));
        // SAFETY: taken once (`done`), and not used after.
        let slice = unsafe { ManuallyDrop::take(&mut self.slice) };
        let _ = slice.leak();
        let recorded = waited
            .map_err(|code| self.stream.gpu.error(code, Doing::Call(self.what.into())))
            .and_then(|()| enter_or_leave(self.stream, self.u, self.what));
        if recorded.is_err() {
            let _ = cs.context().synchronize();
        }
        recorded
    }
}

impl<T> Drop for Lent<'_, T> {
    fn drop(&mut self) {
        let _ = self.give_back();
    }
}

/// Lends `len` elements of `T` of the allocation range `u` (read, or written) to cudarc code
/// `f`, on `stream` (see the module docs).
pub(super) fn lend<T: DeviceCopy, R>(
    stream: &Stream,
    u: Use<'_>,
    len: usize,
    f: impl FnOnce(&mut CudaSlice<T>, &Arc<CudaStream>) -> R,
) -> Result<R> {
    let s = &stream.inner;
    let what =
        if u.write { "lending memory to cudarc (with_cudarc_mut)" } else { "lending memory to cudarc (with_cudarc)" };
    if crate::stream::in_host_fn() {
        return Err(crate::stream::host_fn_error(what));
    }
    s.gpu.cuda(what)?;
    if u.alloc.kind != AllocKind::Device {
        return Err(Error::Argument(format!("{what}: only device memory can be lent to cudarc")));
    }
    crate::peer::require_same(|| what.into(), &s.gpu, &u.alloc.gpu, "lend the buffer on a stream of its own Gpu")?;
    let cs = cudarc_handle(s)?;
    keep_multi_stream(s, cs)?;
    enter_or_leave(s, u, what)?;
    s.gpu.bind()?;
    // SAFETY: `len` elements of `T` at this address are inside a live device allocation of
    // `cs`'s context (checked above), which the caller's borrow of the buffer keeps alive (and,
    // for a write, unaliased) past this call; the slice is never dropped (`Lent` leaks it back),
    // so cudarc never frees the memory.
    let slice = unsafe { cs.upgrade_device_ptr::<T>(u.device_addr(), len) };
    let mut lent = Lent { slice: ManuallyDrop::new(slice), stream: s, cs, u, what, done: false };
    // The slice's events mark the entry (after Cohort's conflicting work): cudarc's work on
    // other streams waits for them.
    lent_events(&mut lent.slice, cs, |event| event.record(cs))
        .map_err(|code| s.gpu.error(code, Doing::Call(what.into())))?;
    let r = f(&mut lent.slice, cs);
    lent.give_back()?;
    Ok(r)
}
