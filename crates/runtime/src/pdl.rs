//! Programmatic dependent launch (sm_90): a kernel that may begin while the kernel before it on
//! its stream is still finishing (`cuLaunchKernelEx` with
//! `CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION`).
//!
//! # Why it is safe
//!
//! With the attribute, the driver may schedule the new grid as soon as every block of the grid
//! before it has executed `griddepcontrol.launch_dependents` or exited — before that grid has
//! completed and before its writes are visible. A grid that touched memory then would race
//! with it. So only kernels declared `#[kernel(dependent)]` are ever launched this way: their
//! PTX entry executes `griddepcontrol.wait` (which returns once every prerequisite grid has
//! completed and its memory operations are visible) before it rebuilds an argument or runs any
//! of the body (see `#[kernel]`'s expansion). Three things tie a launch to that entry:
//!
//! - the generated `launch_programmatic` exists only on `dependent` kernels (a compile error
//!   elsewhere), and its ABI record carries `ABI_FLAG_DEPENDENT`, which `load` compares with
//!   the module's record of the entry (another declaration of the same name is an `Err`);
//! - the wait exists only in PTX for sm_90 and later (`griddepcontrol` is an sm_90 instruction):
//!   at `load`, the runtime looks for it in the entry the module really holds, and a module
//!   without it (the sm_80 PTX on any device, PTX text loaded by hand) launches the kernel in
//!   plain stream order instead ([`Programmatic::StreamOrder`]);
//! - `Function::launch_programmatic_tracked` (what the generated method calls) refuses a
//!   function that was not loaded as a dependent kernel ([`Programmatic::No`]): an `Err`.
//!
//! For the tracker nothing changes: the dependent grid's accesses all happen after its
//! predecessors on the stream have completed, which is what stream order promises, so it is
//! recorded as any launch on the stream (and completes after them). On the CPU device, whose
//! streams run each launch to its end when it is enqueued, a programmatic launch is a launch.

use crate::ptx::PtxModule;

/// How a kernel may be launched programmatically.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Programmatic {
    /// Not a `#[kernel(dependent)]` kernel (or loaded without its launcher's ABI record): a
    /// programmatic launch is refused.
    No,
    /// A dependent kernel whose loaded entry has no `griddepcontrol.wait` (PTX below sm_90),
    /// or the CPU device: launched in plain stream order.
    StreamOrder,
    /// A dependent kernel whose entry waits: launched with the programmatic attribute.
    Overlap,
}

/// What `load` decides for entry `name` of `ptx`, whose launcher's ABI record says
/// `dependent` (and `load` checked that the module's record says the same).
pub(crate) fn classify(ptx: &PtxModule, name: &str, dependent: bool, can_overlap: bool) -> Programmatic {
    if !dependent {
        return Programmatic::No;
    }
    if !can_overlap || !entry_waits(ptx.ptx, name) {
        return Programmatic::StreamOrder;
    }
    Programmatic::Overlap
}

/// Whether entry `name` of the PTX text executes `griddepcontrol.wait` (in its own body or a
/// function it calls).
pub(crate) fn entry_waits(ptx: &str, name: &str) -> bool {
    let has_wait = |_: &str, body: &str| {
        body.lines().any(|l| {
            let l = l.trim_start();
            let l = l.strip_prefix('@').map_or(l, |r| r.split_once(char::is_whitespace).map_or("", |(_, r)| r));
            l.trim_start().starts_with("griddepcontrol.wait")
        })
    };
    crate::ptx::entries_where(ptx, has_wait, |_| false).iter().any(|e| e == name)
}

#[cfg(test)]
mod tests {
    use super::entry_waits;

    const PTX: &str = "
.version 7.8
.target sm_90
.address_size 64

.visible .entry waits(
\t.param .u64 p
)
{
\tgriddepcontrol.wait;
\tld.param.u64 %rd1, [p];
\tret;
}

.visible .entry plain(
\t.param .u64 p
)
{
\t// griddepcontrol.wait in a comment is not a wait
\tld.param.u64 %rd1, [p];
\tret;
}
";

    #[test]
    fn finds_the_wait_in_the_entry_only() {
        assert!(entry_waits(PTX, "waits"));
        assert!(!entry_waits(PTX, "plain"));
        assert!(!entry_waits(PTX, "absent"));
    }
}
