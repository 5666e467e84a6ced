//! The panic record: host-mapped memory where a panicking kernel thread leaves its location
//! (and, in checked mode, the check that failed), which the runtime reads when a launch's
//! stream reports the trap.

use std::ffi::CString;
use std::sync::Arc;

use cohort::panic::{PANIC_RECORD_SYMBOL, PanicRecord};

use crate::backend::{Fault, HostAlloc, ModuleH};
use crate::device::GpuInner;
use crate::error::Result;

/// Host-mapped memory where a panicking kernel thread leaves its location.
pub(crate) struct PanicSlot {
    pub(super) host: *mut PanicRecord,
}

// SAFETY: the pointer is to pinned host memory owned by the module; reads are volatile and the
// device writes it only before trapping.
unsafe impl Send for PanicSlot {}

impl PanicSlot {
    pub(crate) fn read(&self) -> Option<String> {
        // SAFETY: `host` points at a live, pinned `PanicRecord` (freed only after the slot is
        // removed from the registry).
        let rec = unsafe { std::ptr::read_volatile(self.host) };
        (rec.claimed != 0).then(|| {
            let what = match rec.check_text() {
                Some(check) => format!("{check}; "),
                None => String::new(),
            };
            format!(
                "{what}panicked at {}:{}:{} in block ({},{},{}) thread ({},{},{})",
                rec.file(),
                rec.line,
                rec.column,
                rec.block[0],
                rec.block[1],
                rec.block[2],
                rec.thread[0],
                rec.thread[1],
                rec.thread[2]
            )
        })
    }
}

/// Allocates the host-mapped [`PanicRecord`] and stores its device address in the module's
/// `cohort_panic_record` global (absent when the kernels crate has no Cohort panic handler).
pub(super) fn register_panic_record(gpu: &Arc<GpuInner>, module: ModuleH, declared: bool) -> Result<*mut PanicRecord> {
    if !declared {
        return Ok(std::ptr::null_mut());
    }
    let sym = CString::new(PANIC_RECORD_SYMBOL).expect("no NUL in the symbol");
    // SAFETY: live module of the current context.
    let Some((global, size)) = (unsafe { gpu.backend.global(module, &sym) }) else { return Ok(std::ptr::null_mut()) };
    if size != std::mem::size_of::<u64>() {
        return Ok(std::ptr::null_mut());
    }
    let drv = |what: &str| {
        let what = what.to_string();
        move |fault: Fault| fault.into_error(what)
    };
    // Pinned, device-mapped host memory of the record's size (not portable: this context's).
    let host = gpu
        .backend
        .alloc_host(std::mem::size_of::<PanicRecord>(), HostAlloc { portable: false, write_combined: false })
        .map_err(drv("allocating the panic record"))?
        .cast::<PanicRecord>();
    // SAFETY: `host` is a fresh allocation of the right size and alignment (pinned pages).
    unsafe { host.write(PanicRecord::EMPTY) };
    // SAFETY: `host` was allocated mapped.
    let dev = unsafe { gpu.backend.host_device_ptr(host.cast()) }.map_err(drv("mapping the panic record"))?;
    // SAFETY: `global` is the module's 8-byte pointer variable.
    unsafe { gpu.backend.copy_htod(global, (&raw const dev).cast(), 8) }
        .map_err(drv("registering the panic record"))?;
    gpu.panic_records.lock().unwrap_or_else(|p| p.into_inner()).push(PanicSlot { host });
    Ok(host)
}
