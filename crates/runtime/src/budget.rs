//! The device-side launch budget of a module whose kernels launch kernels.
//!
//! The device runtime keeps at most `cudaLimitDevRuntimePendingLaunchCount` launches that have
//! not completed. Past it, CUDA documents an error, but measured on an H200 (driver 580) the
//! launching threads wait for slots instead, holding the SMs the pending children need: the
//! launch never finishes. So Cohort never lets a grid tree get there: before each host launch
//! of a kernel that can launch kernels (found from the PTX's call graph), the host sets the
//! module's `cohort_launch_budget` to the pending-launch limit, on the launch's stream; every
//! device-side launch takes one unit first and is refused with `LaunchError::BudgetSpent`
//! when none is left. A tree of grids thus makes at most *limit* device launches in all, so at
//! most *limit* are ever pending. The limit is the context's, so two such host launches in one
//! context — of one module or of two — run one after another: each waits (on the GPU, through
//! an event) for the previous one's completion before its reset. The event lives in a
//! [`LaunchSerial`] per context: every `Gpu` on a device's primary context shares one; an
//! isolated context has its own.
//!
//! The budget counts launches, not pending launches: a tree that makes more launches than the
//! limit over its life gets `Err`s even if they would never all be pending at once. Raise the
//! limit (`Gpu::set_pending_launch_limit`) for such trees; each pending slot costs device
//! memory.

use std::sync::{Arc, Mutex, Weak};

use crate::backend::{Backend, DevPtr, EventH, Fault, Fill, Limit, ModuleH, StreamH};
use crate::error::{Error, Result};

/// A module's launch budget: the device address of its counter.
pub(crate) struct LaunchBudget {
    counter: DevPtr,
}

/// The completion event of a context's last budgeted host launch. Held by every `GpuInner` of
/// the context (declared before its context, so dropped — the event destroyed — while the
/// context still lives).
#[derive(Default)]
pub(crate) struct LaunchSerial {
    last: Mutex<Option<Event>>,
}

impl LaunchSerial {
    /// The one of device `ordinal`'s primary context, shared by every `Gpu` on it while any
    /// lives.
    pub(crate) fn for_primary(ordinal: usize) -> Arc<Self> {
        static PRIMARY: Mutex<Vec<(usize, Weak<LaunchSerial>)>> = Mutex::new(Vec::new());
        let mut all = PRIMARY.lock().unwrap_or_else(|p| p.into_inner());
        all.retain(|(_, w)| w.strong_count() > 0);
        if let Some(s) = all.iter().find(|(o, _)| *o == ordinal).and_then(|(_, w)| w.upgrade()) {
            return s;
        }
        let s = Arc::new(Self::default());
        all.push((ordinal, Arc::downgrade(&s)));
        s
    }
}

/// An event owned by the budget (destroyed with it).
struct Event(EventH);

impl Drop for Event {
    fn drop(&mut self) {
        // SAFETY: our event, not used after this. Its context is still alive: the
        // `LaunchSerial` that owns it is dropped before the last `GpuInner` releases it. A
        // budget is a GPU's only (the CPU device's modules have none), and a CUDA event may be
        // destroyed with any context current.
        let _ = unsafe { crate::backend::cuda::destroy_event(self.0) };
    }
}

fn driver(what: &str) -> impl FnOnce(Fault) -> Error + '_ {
    move |fault| fault.into_error(what.to_string())
}

impl LaunchBudget {
    /// The budget of `module`, if its PTX declares one (`cohort_launch_budget`, 4 bytes).
    /// `globals`: the module's declared variables (`symbol::layouts`); it is looked up only if
    /// declared there.
    pub(crate) fn find(
        backend: &dyn Backend,
        module: ModuleH,
        globals: &std::collections::HashMap<String, (usize, usize)>,
    ) -> Option<Self> {
        if !globals.contains_key(cohort::launch::LAUNCH_BUDGET_SYMBOL) {
            return None;
        }
        let sym = std::ffi::CString::new(cohort::launch::LAUNCH_BUDGET_SYMBOL).expect("no NUL in the symbol");
        // SAFETY: live module of the current context.
        let found = unsafe { backend.global(module, &sym) };
        found.and_then(|(counter, size)| (size == 4).then_some(Self { counter }))
    }

    /// Runs `launch` (which enqueues one host launch on `stream`) with a fresh budget: after
    /// the context's previous budgeted launch (`serial`) has completed, the counter is set to
    /// the context's pending-launch limit on `stream`; then the launch; then its completion is
    /// recorded. The context must be current, and `serial` must be its [`LaunchSerial`].
    pub(crate) fn around(
        &self,
        backend: &dyn Backend,
        serial: &LaunchSerial,
        stream: StreamH,
        launch: impl FnOnce() -> Result<()>,
    ) -> Result<()> {
        let mut last = serial.last.lock().unwrap_or_else(|p| p.into_inner());
        let limit = backend.limit(Limit::PendingLaunches).map_err(driver("reading the pending-launch limit"))?;
        let budget = u32::try_from(limit).unwrap_or(u32::MAX).min(i32::MAX as u32);
        if let Some(ev) = last.as_ref() {
            // SAFETY: a live stream and event of the current context.
            unsafe { backend.stream_wait_event(stream, ev.0) }
                .map_err(driver("ordering a device-launching kernel after the previous one"))?;
        }
        // SAFETY: `counter` is the module's 4-byte global, live while the module is.
        unsafe { backend.memset_async(self.counter, Fill::U32(budget), 1, stream) }
            .map_err(driver("setting the device-launch budget"))?;
        launch()?;
        if last.is_none() {
            let ev = backend.create_event(false).map_err(driver("creating the device-launch budget's event"))?;
            *last = Some(Event(ev));
        }
        let ev = last.as_ref().map(|e| e.0).expect("set above");
        // SAFETY: a live event and stream of the current context.
        unsafe { backend.record_event(ev, stream) }.map_err(driver("recording a device-launching kernel"))
    }
}
