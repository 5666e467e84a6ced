//! What a panic in a kernel does: record where, then trap.
//!
//! CUDA C++ kernels report `assert` failures through `printf`. Doing that from Rust's panic
//! handler costs every kernel that has a bounds check dearly: the external `vprintf` call (or
//! reading the panic message, which keeps `core::fmt` alive) makes ptxas assume the worst for
//! the whole call graph (50 registers and 88–112 bytes of stack on a vector add, measured with
//! ptxas 13.0). So the handler here is inlined, calls nothing, and writes only the panic's
//! *location* and the thread's coordinates into a [`PanicRecord`] in host-mapped memory that the
//! host runtime registers when it loads the module; then it traps. The host reads the record
//! after the failed synchronization (the context is dead by then, the pinned host page is not)
//! and puts it into the error it returns:
//!
//! ```text
//! kernel `oob` trapped: panicked at kernels-gpu/src/tour.rs:41:17 in block (3,0,0) thread (17,0,0)
//! ```
//!
//! The panic *message* is not recorded (see above); the location points at the line.
//! Disable the `panic-handler` feature to install your own handler.

/// Longest file path a [`PanicRecord`] keeps (longer paths keep their tail).
pub const PANIC_FILE_BYTES: usize = 192;

/// Where the first panicking thread of a launch stopped. Shared by the device handler and the
/// host runtime, so both see one layout.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct PanicRecord {
    /// 0 until the first panicking thread has filled in the rest; then 1 (written last, after a
    /// system-scope fence, so a host that sees 1 sees the whole record).
    pub claimed: u32,
    /// Source line.
    pub line: u32,
    /// Source column.
    pub column: u32,
    /// Bytes used in `file`.
    pub file_len: u32,
    /// `blockIdx` of the panicking thread.
    pub block: [u32; 3],
    /// `threadIdx` of the panicking thread.
    pub thread: [u32; 3],
    /// The source file, UTF-8, not NUL-terminated.
    pub file: [u8; PANIC_FILE_BYTES],
    /// What a failed check of checked mode found ([`CheckKind`] as `u32`; 0 for an ordinary
    /// panic), and its two numbers.
    pub check: [u32; 3],
    /// Bytes used in `op`.
    pub op_len: u32,
    /// The collective a failed check was about (`shfl`, `sync_threads_count`, …), UTF-8.
    pub op: [u8; PANIC_OP_BYTES],
}

/// Longest collective name a [`PanicRecord`] keeps.
pub const PANIC_OP_BYTES: usize = 28;

/// What a failed check of checked mode was about (the first word of [`PanicRecord::check`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u32)]
pub enum CheckKind {
    /// A warp-level collective (tile of ≤ 32, coalesced group): numbers are the group's lane
    /// mask and the lanes that reached this call site.
    Warp = 1,
    /// A block-level collective: numbers are this thread's rank in the block and the rank of the
    /// thread it disagrees with (at another barrier).
    Block = 2,
    /// A grid sync that not every block reached in time: numbers are the milliseconds waited
    /// and the blocks of the grid.
    Grid = 3,
    /// A multi-grid sync that did not complete in time, or whose launch was aborted: numbers
    /// are the milliseconds waited (0: aborted by the host) and the grids of the launch.
    MultiGrid = 4,
    /// Grids at different multi-grid barriers (a plain sync and a `MultiGridVec` phase change,
    /// or two vectors' phases): numbers are the rank of a grid that differs from grid 0 and
    /// the grids of the launch.
    MultiGridPhase = 5,
    /// An address that is not in global memory given to an operation that reads global memory
    /// only (`memcpy_async`'s source, which `cp.async` would fault on); no numbers.
    NotGlobal = 6,
}

impl CheckKind {
    /// The kind of a record's first check word.
    #[must_use]
    pub const fn from_u32(v: u32) -> Option<Self> {
        match v {
            1 => Some(Self::Warp),
            2 => Some(Self::Block),
            3 => Some(Self::Grid),
            4 => Some(Self::MultiGrid),
            5 => Some(Self::MultiGridPhase),
            6 => Some(Self::NotGlobal),
            _ => None,
        }
    }
}

impl PanicRecord {
    /// An unclaimed record.
    pub const EMPTY: Self = Self {
        claimed: 0,
        line: 0,
        column: 0,
        file_len: 0,
        block: [0; 3],
        thread: [0; 3],
        file: [0; PANIC_FILE_BYTES],
        check: [0; 3],
        op_len: 0,
        op: [0; PANIC_OP_BYTES],
    };

    /// The collective a failed check was about (empty for an ordinary panic).
    #[must_use]
    pub fn op(&self) -> &str {
        let n = (self.op_len as usize).min(PANIC_OP_BYTES);
        core::str::from_utf8(&self.op[..n]).unwrap_or("")
    }

    /// How a failed check of checked mode reads (`None` for an ordinary panic).
    #[must_use]
    pub fn check_text(&self) -> Option<CheckText<'_>> {
        CheckKind::from_u32(self.check[0]).map(|kind| CheckText {
            kind,
            op: self.op(),
            a: self.check[1],
            b: self.check[2],
        })
    }

    /// The file path recorded (lossy if it was cut inside a character).
    #[must_use]
    pub fn file(&self) -> &str {
        let n = (self.file_len as usize).min(PANIC_FILE_BYTES);
        match core::str::from_utf8(&self.file[..n]) {
            Ok(s) => s,
            Err(e) => core::str::from_utf8(&self.file[..e.valid_up_to()]).unwrap_or(""),
        }
    }
}

/// A failed check, ready to print (see [`PanicRecord::check_text`]).
#[derive(Clone, Copy, Debug)]
pub struct CheckText<'a> {
    kind: CheckKind,
    op: &'a str,
    a: u32,
    b: u32,
}

impl core::fmt::Display for CheckText<'_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        let op = self.op;
        match self.kind {
            CheckKind::Warp => write!(
                f,
                "divergence: `{op}` of the group of lanes {:#010x} was reached here by lanes {:#010x} only; the other \
                 members called another collective site (every member must make the same call, see `cohort::cg`'s \
                 convergence rule)",
                self.a, self.b
            ),
            CheckKind::Block => write!(
                f,
                "divergence: thread rank {} of its block reached `{op}` here while thread rank {} is at another \
                 barrier of the block (every thread of the block must reach the same barrier)",
                self.a, self.b
            ),
            CheckKind::Grid => write!(
                f,
                "divergence: `{op}` waited {} ms and not every one of the {} blocks arrived (a block skipped the grid \
                 sync or exited)",
                self.a, self.b
            ),
            CheckKind::MultiGridPhase => write!(
                f,
                "divergence: grid 0 of {} reached `{op}` here while grid {} is at another multi-grid barrier (every \
                 grid must make the same sequence of syncs and `MultiGridVec` phase changes)",
                self.b, self.a
            ),
            CheckKind::MultiGrid if self.a == 0 => write!(
                f,
                "`{op}` ended: the host aborted the multi-grid launch of {} grids (launching another grid failed)",
                self.b
            ),
            CheckKind::NotGlobal => write!(
                f,
                "`{op}`: the source is not in global memory (cp.async reads only global memory: a kernel parameter \
                 slice or a `global!` variable, not a thread's local array, a `constant!` or shared memory)"
            ),
            CheckKind::MultiGrid => write!(
                f,
                "`{op}` waited {} ms and not every one of the {} grids arrived (a grid skipped the multi-grid sync, \
                 exited or trapped; the limit is the launch's `MultiGrid::timeout`)",
                self.a, self.b
            ),
        }
    }
}

/// The symbol the host runtime looks up to register the record's device address.
pub const PANIC_RECORD_SYMBOL: &str = "cohort_panic_record";

#[cfg(all(target_arch = "nvptx64", feature = "panic-handler"))]
mod handler {
    use super::{PANIC_FILE_BYTES, PanicRecord};
    use crate::atomic::{AtomicU32, Ordering};

    /// Device address of the host-mapped [`PanicRecord`], written by the host at module load;
    /// null if the host registered none.
    #[unsafe(no_mangle)]
    #[used]
    static mut cohort_panic_record: *mut PanicRecord = core::ptr::null_mut();

    /// Which thread fills in the record: the first to swap this 0 to 1, which sets it to 2 when
    /// the record is written (the others wait for that before trapping). It lives in device
    /// memory, because atomics on host-mapped memory are not allowed everywhere (PCIe without
    /// host-native atomics; compute-sanitizer's memcheck flags them); the record itself then
    /// takes plain stores only. Never reset: a panic traps, and the context dies with it.
    #[used]
    // SAFETY: a device `static` is `.global` memory, the space of `AtomicU32`.
    static COHORT_PANIC_CLAIM: AtomicU32 = unsafe { AtomicU32::new(0) };

    // `#[inline(always)]` on the handler is reported as ignored, but it does reach LLVM: without
    // it ptxas charges every kernel with a bounds check 32 registers more (measured, ptxas 13.0).
    #[panic_handler]
    #[allow(unused_attributes)]
    #[inline(always)]
    fn panic(info: &core::panic::PanicInfo<'_>) -> ! {
        record_and_trap(info.location(), None)
    }

    /// Writes the record (location, thread, and a failed check's detail) if this thread is the
    /// first to panic, then traps.
    #[inline(always)]
    pub(crate) fn record_and_trap(loc: Option<&core::panic::Location<'_>>, check: Option<(u32, &str, u32, u32)>) -> ! {
        // SAFETY: the host writes this pointer once, before any launch of the module.
        let rec = unsafe { core::ptr::read_volatile(&raw const cohort_panic_record) };
        if !rec.is_null() {
            let claim = &COHORT_PANIC_CLAIM;
            if claim.compare_exchange(0, 1, Ordering::Relaxed, Ordering::Relaxed).is_ok() {
                // SAFETY: this thread won the claim, so it alone writes the record.
                unsafe { fill(&mut *rec, loc, check) };
                claim.store(2, Ordering::Release);
            } else {
                // A trap ends the whole launch at once: wait (boundedly, ~0.1 s) until the
                // winner has written the record, or it is lost with the context.
                let mut n = 0u32;
                while claim.load(Ordering::Acquire) != 2 && n < 1 << 20 {
                    crate::raw::nanosleep(100);
                    n += 1;
                }
            }
        }
        crate::raw::trap()
    }

    #[inline(always)]
    fn fill(rec: &mut PanicRecord, loc: Option<&core::panic::Location<'_>>, check: Option<(u32, &str, u32, u32)>) {
        use crate::raw;
        // SAFETY: `rec` is a valid, exclusively claimed record (for every volatile write below).
        unsafe {
            if let Some((kind, op, a, b)) = check {
                core::ptr::write_volatile(&mut rec.check, [kind, a, b]);
                let op = op.as_bytes();
                let n = op.len().min(super::PANIC_OP_BYTES);
                let mut i = 0;
                while i < n {
                    core::ptr::write_volatile(rec.op.as_mut_ptr().add(i), *op.as_ptr().add(i));
                    i += 1;
                }
                core::ptr::write_volatile(&mut rec.op_len, n as u32);
            }
            core::ptr::write_volatile(&mut rec.block, [raw::ctaid_x(), raw::ctaid_y(), raw::ctaid_z()]);
            core::ptr::write_volatile(&mut rec.thread, [raw::tid_x(), raw::tid_y(), raw::tid_z()]);
            if let Some(loc) = loc {
                let file = loc.file().as_bytes();
                let skip = file.len().saturating_sub(PANIC_FILE_BYTES);
                let file = &file[skip..];
                let mut i = 0;
                while i < file.len() {
                    core::ptr::write_volatile(rec.file.as_mut_ptr().add(i), *file.as_ptr().add(i));
                    i += 1;
                }
                core::ptr::write_volatile(&mut rec.file_len, file.len() as u32);
                core::ptr::write_volatile(&mut rec.line, loc.line());
                core::ptr::write_volatile(&mut rec.column, loc.column());
            }
            raw::fence_sc_sys();
            core::ptr::write_volatile(&mut rec.claimed, 1);
        }
        raw::fence_sc_sys();
    }
}

/// Ends the kernel because `op` was given an address outside global memory, which its
/// instruction cannot read (in every build, not only checked mode): on a GPU, records the
/// caller's location, the thread and [`CheckKind::NotGlobal`], then traps, so the host's `Err`
/// names `op` and the call site; on the host, a panic with the same text at the caller.
#[cold]
#[inline(never)]
#[track_caller]
pub(crate) fn not_global(op: &str) -> ! {
    #[cfg(all(target_arch = "nvptx64", feature = "panic-handler"))]
    {
        handler::record_and_trap(Some(core::panic::Location::caller()), Some((CheckKind::NotGlobal as u32, op, 0, 0)))
    }
    #[cfg(not(all(target_arch = "nvptx64", feature = "panic-handler")))]
    {
        panic!("{}", CheckText { kind: CheckKind::NotGlobal, op, a: 0, b: 0 })
    }
}

/// Ends the kernel for a failed check of checked mode: records `loc`, the thread, `kind`, `op`
/// and the two numbers (as a panic does), then traps; the host's `Err` carries them.
#[cold]
#[inline(never)]
pub(crate) fn fail_check(kind: CheckKind, op: &str, a: u32, b: u32, loc: &core::panic::Location<'_>) -> ! {
    #[cfg(all(target_arch = "nvptx64", feature = "panic-handler"))]
    {
        handler::record_and_trap(Some(loc), Some((kind as u32, op, a, b)))
    }
    #[cfg(not(all(target_arch = "nvptx64", feature = "panic-handler")))]
    {
        panic!("{} at {loc}", CheckText { kind, op, a, b })
    }
}
