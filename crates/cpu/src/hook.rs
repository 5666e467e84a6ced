//! The panic hook that records where a kernel thread panicked.

use std::sync::Once;

use crate::ctx::{CTX, LAST_PANIC};

static INSTALL: Once = Once::new();

/// Installs (once per process) a panic hook that, on an OS thread running a CUDA thread of a
/// CPU launch, records the panic's location and message for the launch's
/// [`CpuError::Panic`](crate::CpuError::Panic) instead of printing them; every other panic goes
/// to the hook that was installed before.
pub(crate) fn install() {
    INSTALL.call_once(|| {
        let prev = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if CTX.with(|c| c.get().active) {
                let loc = info.location().map(|l| (l.file().to_owned(), l.line(), l.column()));
                let msg = info.payload_as_str().map_or_else(|| "Box<dyn Any>".to_owned(), str::to_owned);
                LAST_PANIC.with(|l| *l.borrow_mut() = Some((loc, msg)));
            } else {
                prev(info);
            }
        }));
    });
}
