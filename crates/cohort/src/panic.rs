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
    /// Where the thread (or block) that a failed check disagrees with is: line, column, bytes
    /// used in `other_file` (all 0 when the check names none).
    pub other: [u32; 3],
    /// Its source file, as `file`.
    pub other_file: [u8; PANIC_FILE_BYTES],
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
    /// As [`Warp`](Self::Warp), where the members are at two calls with the same source
    /// location (inside one macro expansion or `#[track_caller]` helper).
    WarpSameSite = 6,
    /// As [`Block`](Self::Block), where the threads are at two calls with the same source
    /// location.
    BlockSameSite = 7,
    /// Blocks at different grid syncs (another call: a grid sync, a `GridVec` phase change or
    /// a `reduce_grid` elsewhere), which would pass each other's barrier: numbers are this
    /// block's rank and block 0's (0); the record's other site is block 0's call.
    GridSite = 8,
    /// As [`GridSite`](Self::GridSite), with the two calls at the same source location.
    GridSiteSameSite = 9,
    /// A phase change (`GridVec::publish`, …) that not every thread of the block reached in
    /// time: numbers are the milliseconds waited and the threads of the block.
    PhaseBlock = 10,
    /// An address that is not in global memory given to an operation that reads global memory
    /// only (`memcpy_async`'s source, which `cp.async` would fault on); no numbers.
    NotGlobal = 11,
    /// A cluster kernel's block that left its body and waited in vain for the other blocks of
    /// its cluster to leave theirs: numbers are the milliseconds waited and the blocks of the
    /// cluster.
    ClusterExit = 12,
    /// A wait for a phase of an asynchronous barrier (`cg::AsyncBarrier`) that did not
    /// complete in time: numbers are the milliseconds waited and the phase's number.
    AsyncBarrier = 13,
    /// A misused asynchronous barrier (`cg::AsyncBarrier`): number 1, its scope entered again
    /// while live (a nested `scope` of the same barrier); 2, a thread arrived on a phase it had
    /// arrived on already (a token forgotten); 3, an arrival after `arrive_and_drop`; 4, a bulk
    /// copy whose size (number 2) is not a multiple of 16 bytes; 5, one of 2^20 bytes or more
    /// (number 2: the size); 6, a bulk copy's source or destination not 16-byte aligned; 7, a
    /// scope that threads of the block returned before (number 2: how many); 8, a TMA copy's
    /// shared tile that is not the size of the tensor map's box (number 2: the tile's bytes);
    /// 9, a TMA copy's shared tile not 128-byte aligned (number 2: its address); 10, a
    /// block-wide copy whose arguments in this thread (number 2: its rank) differ from thread
    /// 0's (checked mode and the CPU device); 11, a TMA load whose innermost coordinate (number
    /// 2) is not at a multiple of 16 bytes; 12, a TMA load of a swizzled map (number 2: its
    /// span) into a plain tile, which has no swizzle in its type; 13, a TMA load into a
    /// `wgmma::Tile` whose swizzle differs from the map's (number 2: the map's span); 14, a TMA
    /// load into a `wgmma::Tile` whose shape is not the map's box (number 2: the box's rows).
    AsyncBarrierMisuse = 14,
    /// A split cluster barrier misused (`ClusterGroup::barrier_arrive`): number 1, `cluster.sync()`
    /// while this thread's split arrival is not waited for; 2, a second `barrier_arrive` then.
    ClusterSplitMisuse = 15,
    /// Hopper's warpgroup MMA or its TMA pipeline misused (`cohort::wgmma`): number 1, a
    /// warpgroup in a block whose size (number 2) is not a multiple of 128; 2, a pipeline in a
    /// block whose size (number 2) is not 128 × (1 + consumer warpgroups); 3, a pipeline whose
    /// stages do not fit in the launch's dynamic shared memory (number 2: the bytes it needs); 4,
    /// a consumer that acquired every stage of the ring without releasing one (its next acquire
    /// would wait forever); 5, the threads of a warpgroup at different calls (checked mode and
    /// the CPU device; number 2: the warp of the warpgroup that differs); 6, a descriptor or an
    /// element outside its tile (number 2: the row); 7, a pipeline scope entered again while
    /// live; 8, a tile not 1024-byte aligned (number 2: its address); 9, a group retired
    /// keeping more groups in flight than were committed after it (number 2: how many were);
    /// 10, a group one of whose descriptors was outside its tile (GPU builds without checks,
    /// reported after the group's commit).
    WgmmaMisuse = 16,
    /// A split block or grid barrier misused (`ThreadBlock::barrier_arrive`,
    /// `GridGroup::barrier_arrive`; checked mode and the CPU device). Number 2: 0 the block's, 1
    /// the grid's. Number 1: 1, a second arrival while this thread has one it has not waited for
    /// (a token forgotten); 2, a collective of the block (`sync_threads*`, a block `reduce` or
    /// scan) between a block arrival and its wait; 3, a token dropped without its wait (the
    /// record's site is the arrival); 4, a thread left the kernel with an arrival it never waited
    /// for; 5, `grid.sync()` between a grid arrival and its wait.
    SplitMisuse = 17,
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
            6 => Some(Self::WarpSameSite),
            7 => Some(Self::BlockSameSite),
            8 => Some(Self::GridSite),
            9 => Some(Self::GridSiteSameSite),
            10 => Some(Self::PhaseBlock),
            11 => Some(Self::NotGlobal),
            12 => Some(Self::ClusterExit),
            13 => Some(Self::AsyncBarrier),
            14 => Some(Self::AsyncBarrierMisuse),
            15 => Some(Self::ClusterSplitMisuse),
            16 => Some(Self::WgmmaMisuse),
            17 => Some(Self::SplitMisuse),
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
        other: [0; 3],
        other_file: [0; PANIC_FILE_BYTES],
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
        let other = (self.other[2] != 0).then(|| (text(&self.other_file, self.other[2]), self.other[0], self.other[1]));
        CheckKind::from_u32(self.check[0]).map(|kind| CheckText {
            kind,
            op: self.op(),
            a: self.check[1],
            b: self.check[2],
            here: (self.file(), self.line, self.column),
            other,
        })
    }

    /// The file path recorded (lossy if it was cut inside a character).
    #[must_use]
    pub fn file(&self) -> &str {
        text(&self.file, self.file_len)
    }
}

/// The first `len` bytes of `bytes` as text (lossy if cut inside a character).
fn text(bytes: &[u8; PANIC_FILE_BYTES], len: u32) -> &str {
    let n = (len as usize).min(PANIC_FILE_BYTES);
    match core::str::from_utf8(&bytes[..n]) {
        Ok(s) => s,
        Err(e) => core::str::from_utf8(&bytes[..e.valid_up_to()]).unwrap_or(""),
    }
}

/// A failed check, ready to print (see [`PanicRecord::check_text`]).
#[derive(Clone, Copy, Debug)]
pub struct CheckText<'a> {
    kind: CheckKind,
    op: &'a str,
    a: u32,
    b: u32,
    /// The reporting thread's call site: file, line, column.
    here: (&'a str, u32, u32),
    /// The site of the thread or block it disagrees with, if the check names one.
    other: Option<(&'a str, u32, u32)>,
}

/// Writes ` (file:line:col)` for `other`, if there is one.
struct Other<'a>(Option<(&'a str, u32, u32)>);

impl core::fmt::Display for Other<'_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self.0 {
            Some((file, line, col)) => write!(f, " ({file}:{line}:{col})"),
            None => Ok(()),
        }
    }
}

impl core::fmt::Display for CheckText<'_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        let op = self.op;
        let (file, line, col) = self.here;
        let other = Other(self.other);
        match self.kind {
            CheckKind::Warp => write!(
                f,
                "divergence: `{op}` of the group of lanes {:#010x} was reached here by lanes {:#010x} only; the other \
                 members called another collective site (every member must make the same call, see `cohort::cg`'s \
                 convergence rule)",
                self.a, self.b
            ),
            CheckKind::WarpSameSite => write!(
                f,
                "divergence: `{op}` of the group of lanes {:#010x} was reached at one call by lanes {:#010x} only; the \
                 other members are at another call with the same source location: two calls inside one macro \
                 expansion or `#[track_caller]` helper at {file}:{line}:{col} diverged (every member must make the \
                 same call, see `cohort::cg`'s convergence rule)",
                self.a, self.b
            ),
            CheckKind::Block => write!(
                f,
                "divergence: thread rank {} of its block reached `{op}` here while thread rank {} is at another \
                 barrier of the block{other} (every thread of the block must reach the same barrier)",
                self.a, self.b
            ),
            CheckKind::BlockSameSite => write!(
                f,
                "divergence: thread rank {} of its block reached `{op}` at one call while thread rank {} is at \
                 another call with the same source location: two calls inside one macro expansion or \
                 `#[track_caller]` helper at {file}:{line}:{col} diverged (every thread of the block must reach the \
                 same barrier)",
                self.a, self.b
            ),
            CheckKind::GridSite => write!(
                f,
                "divergence: block {} reached `{op}` here while block {} is at another grid sync{other} (every block \
                 must make the same grid syncs, `GridVec` phase changes and `reduce_grid` calls, in the same order)",
                self.a, self.b
            ),
            CheckKind::GridSiteSameSite => write!(
                f,
                "divergence: block {} reached `{op}` at one call while block {} is at another call with the same \
                 source location: two calls inside one macro expansion or `#[track_caller]` helper at \
                 {file}:{line}:{col} diverged (every block must make the same grid syncs, in the same order)",
                self.a, self.b
            ),
            CheckKind::PhaseBlock => write!(
                f,
                "divergence: `{op}` waited {} ms and not every one of the {} threads of the block reached it (a thread \
                 is at a barrier of its own, or exited; every thread of the block must make the same phase change)",
                self.a, self.b
            ),
            CheckKind::ClusterSplitMisuse => {
                if self.a == 1 {
                    write!(
                        f,
                        "`{op}`: cluster.sync() while this thread has a split cluster arrival it has not waited for \
                         (barrier_arrive's token)"
                    )
                } else {
                    write!(
                        f,
                        "`{op}`: a second cluster.barrier_arrive() while this thread has an arrival it has not waited for"
                    )
                }
            }
            CheckKind::SplitMisuse => {
                let (group, arrive) = if self.b == 0 {
                    ("block", "thread_block.barrier_arrive()")
                } else {
                    ("grid", "grid.barrier_arrive()")
                };
                match self.a {
                    1 => write!(
                        f,
                        "`{op}`: a second {arrive} while this thread has a split {group} arrival it has not waited for \
                         (its token was forgotten; every arrival is waited for once)"
                    ),
                    2 => write!(
                        f,
                        "`{op}`: a collective of the block while this thread has a split block arrival \
                         (thread_block.barrier_arrive()) it has not waited for: wait for it first"
                    ),
                    3 => write!(
                        f,
                        "`{op}`: the token of the split {group} arrival made here was dropped without waiting for it \
                         (call `token.wait()`: every arrival is waited for once)"
                    ),
                    4 => write!(
                        f,
                        "`{op}`: a thread left the kernel with a split {group} arrival ({arrive}) it never waited for \
                         (its token was forgotten)"
                    ),
                    _ => write!(
                        f,
                        "`{op}`: grid.sync() while this thread has a split grid arrival (grid.barrier_arrive()) it has \
                         not waited for: wait for it first"
                    ),
                }
            }
            CheckKind::ClusterExit => write!(
                f,
                "divergence: this block left the kernel's body and `{op}` waited {} ms for the other blocks of its \
                 cluster of {} to leave theirs (a block still in its body is at a `cluster.sync()` this block no \
                 longer reaches, or spins: every thread of the cluster must make the same cluster syncs)",
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
            CheckKind::AsyncBarrier => write!(
                f,
                "`{op}` waited {} ms for phase {} of an asynchronous barrier, which did not complete: a thread of \
                 the block did not arrive (it exited, or waits elsewhere), or the bytes a copy announced never landed",
                self.a, self.b
            ),
            CheckKind::AsyncBarrierMisuse => match self.a {
                1 => write!(
                    f,
                    "`{op}`: the asynchronous barrier's scope was entered again while it is live (a nested `scope` \
                     of the same barrier would initialise it twice)"
                ),
                2 => write!(
                    f,
                    "`{op}`: this thread arrived on the asynchronous barrier again before waiting for the phase it \
                     arrived on (a token was forgotten)"
                ),
                3 => write!(f, "`{op}`: this thread arrived on the asynchronous barrier after `arrive_and_drop`"),
                4 => write!(f, "`{op}`: the size ({} bytes) is not a multiple of 16 bytes", self.b),
                5 => write!(
                    f,
                    "`{op}`: the size ({} bytes) is not below 2^20 bytes (a barrier phase counts at most 2^20 - 1)",
                    self.b
                ),
                6 => write!(f, "`{op}`: the source and destination must be 16-byte aligned"),
                8 => write!(
                    f,
                    "`{op}`: the shared tile ({} bytes) is not the tensor map's box (a tile holds exactly one box: \
                     `map.box_elements()` elements)",
                    self.b
                ),
                9 => write!(
                    f,
                    "`{op}`: the shared tile (at shared address {:#x}) is not 128-byte aligned, as a tensor copy \
                     needs (declare it with `cohort::tma_tile!`)",
                    self.b
                ),
                11 => write!(
                    f,
                    "`{op}`: the innermost coordinate ({}) is not at a multiple of 16 bytes (`coords[0]` times the \
                     element size must be one: the tensor memory accelerator traps on other coordinates)",
                    self.b as i32
                ),
                12 => write!(
                    f,
                    "`{op}`: the tensor map is swizzled ({} bytes) and the tile is a plain shared slice, whose \
                     readers do not follow a swizzle: load it into a `wgmma::Tile` of that swizzle",
                    self.b
                ),
                13 => write!(
                    f,
                    "`{op}`: the tensor map's swizzle ({} bytes; 0: none) is not the tile's (its type's `Swizzle`)",
                    self.b
                ),
                14 => write!(
                    f,
                    "`{op}`: the tensor map's box ({} rows) is not the tile's shape (a box of [C, R] fills a tile \
                     of R rows of C elements)",
                    self.b
                ),
                10 => write!(
                    f,
                    "`{op}`: thread {} of the block passed other arguments (destination, source or coordinates) \
                     than thread 0: the copy is issued once, with thread 0's, and every thread's borrow must stand \
                     for that copy (call it with the same arguments in every thread)",
                    self.b
                ),
                _ => write!(
                    f,
                    "`{op}`: {} thread(s) of the block returned from the kernel before the asynchronous barrier's \
                     scope (it expects an arrival from every thread of the block, and would wait forever)",
                    self.b
                ),
            },
            CheckKind::WgmmaMisuse => match self.a {
                1 => write!(
                    f,
                    "`{op}`: a warpgroup is 4 whole warps (128 threads) of the block, whose size ({}) is not a \
                     multiple of 128",
                    self.b
                ),
                2 => write!(
                    f,
                    "`{op}`: the pipeline's block must be one producer warpgroup and its consumer warpgroups, 128 \
                     threads each; it has {} threads",
                    self.b
                ),
                3 => write!(
                    f,
                    "`{op}`: the pipeline's stages need {} bytes of dynamic shared memory (1024-byte aligned: ask \
                     for 1 KiB more than the stages), more than the launch gave",
                    self.b
                ),
                4 => write!(
                    f,
                    "`{op}`: this consumer holds every stage of the ring ({}) without releasing one; its next \
                     acquire would wait forever (release a stage before acquiring the next)",
                    self.b
                ),
                5 => write!(
                    f,
                    "divergence: `{op}` is a warpgroup collective, and warp {} of this warpgroup is at another \
                     call (all 128 threads of the warpgroup must make the same call, converged)",
                    self.b
                ),
                6 => write!(
                    f,
                    "`{op}`: rows or columns from ({}) outside the tile (a descriptor covers 64 rows of A or N of B \
                     and 16 of K, at multiples of 8 rows and 16 of K)",
                    self.b
                ),
                7 => write!(f, "`{op}`: the pipeline's scope was entered again while it is live"),
                8 => write!(f, "`{op}`: a wgmma tile at shared address {:#x} is not 1024-byte aligned", self.b),
                9 => write!(
                    f,
                    "`{op}`: only {} group(s) were committed after this one: waiting until that many are pending \
                     would not cover it (use `retire`)",
                    self.b
                ),
                10 => write!(
                    f,
                    "`{op}`: a descriptor of this group was outside its tile (rows or K past the tile, or not at \
                     multiples of 8 rows and 16 of K); its MMAs read other elements of the tile instead"
                ),
                _ => write!(f, "`{op}`: misused (code {})", self.a),
            },
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

    /// A failed check's detail: kind, collective, the two numbers, the other site.
    pub(crate) type Check<'a> = (u32, &'a str, u32, u32, Option<&'a core::panic::Location<'a>>);

    /// Writes the record (location, thread, and a failed check's detail) if this thread is the
    /// first to panic, then traps.
    #[inline(always)]
    pub(crate) fn record_and_trap(loc: Option<&core::panic::Location<'_>>, check: Option<Check<'_>>) -> ! {
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
    fn fill(rec: &mut PanicRecord, loc: Option<&core::panic::Location<'_>>, check: Option<Check<'_>>) {
        use crate::raw;
        // SAFETY: `rec` is a valid, exclusively claimed record (for every volatile write below).
        unsafe {
            if let Some((kind, op, a, b, other)) = check {
                core::ptr::write_volatile(&mut rec.check, [kind, a, b]);
                let op = op.as_bytes();
                let n = op.len().min(super::PANIC_OP_BYTES);
                let mut i = 0;
                while i < n {
                    core::ptr::write_volatile(rec.op.as_mut_ptr().add(i), *op.as_ptr().add(i));
                    i += 1;
                }
                core::ptr::write_volatile(&mut rec.op_len, n as u32);
                if let Some(other) = other {
                    let n = write_file(&mut rec.other_file, other.file());
                    core::ptr::write_volatile(&mut rec.other, [other.line(), other.column(), n]);
                }
            }
            core::ptr::write_volatile(&mut rec.block, [raw::ctaid_x(), raw::ctaid_y(), raw::ctaid_z()]);
            core::ptr::write_volatile(&mut rec.thread, [raw::tid_x(), raw::tid_y(), raw::tid_z()]);
            if let Some(loc) = loc {
                let n = write_file(&mut rec.file, loc.file());
                core::ptr::write_volatile(&mut rec.file_len, n);
                core::ptr::write_volatile(&mut rec.line, loc.line());
                core::ptr::write_volatile(&mut rec.column, loc.column());
            }
            raw::fence_sc_sys();
            core::ptr::write_volatile(&mut rec.claimed, 1);
        }
        raw::fence_sc_sys();
    }

    /// Writes the tail of `file` that fits into `dst` with volatile stores; returns its length.
    #[inline(always)]
    fn write_file(dst: &mut [u8; PANIC_FILE_BYTES], file: &str) -> u32 {
        let file = file.as_bytes();
        let skip = file.len().saturating_sub(PANIC_FILE_BYTES);
        let file = &file[skip..];
        let mut i = 0;
        while i < file.len() {
            // SAFETY: `i < file.len() <= PANIC_FILE_BYTES`, in bounds of both.
            unsafe { core::ptr::write_volatile(dst.as_mut_ptr().add(i), *file.as_ptr().add(i)) };
            i += 1;
        }
        file.len() as u32
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
    let loc = core::panic::Location::caller();
    #[cfg(all(target_arch = "nvptx64", feature = "panic-handler"))]
    {
        handler::record_and_trap(Some(loc), Some((CheckKind::NotGlobal as u32, op, 0, 0, None)))
    }
    #[cfg(not(all(target_arch = "nvptx64", feature = "panic-handler")))]
    {
        let here = (loc.file(), loc.line(), loc.column());
        panic!("{}", CheckText { kind: CheckKind::NotGlobal, op, a: 0, b: 0, here, other: None })
    }
}

/// Ends the kernel for a failed check of checked mode: records `loc`, the thread, `kind`, `op`,
/// the two numbers and the other site (of the thread or block this one disagrees with), as a
/// panic does, then traps; the host's `Err` carries them.
#[cold]
#[inline(never)]
pub(crate) fn fail_check(
    kind: CheckKind,
    op: &str,
    a: u32,
    b: u32,
    loc: &core::panic::Location<'_>,
    other: Option<&core::panic::Location<'_>>,
) -> ! {
    #[cfg(all(target_arch = "nvptx64", feature = "panic-handler"))]
    {
        handler::record_and_trap(Some(loc), Some((kind as u32, op, a, b, other)))
    }
    #[cfg(not(all(target_arch = "nvptx64", feature = "panic-handler")))]
    {
        let here = (loc.file(), loc.line(), loc.column());
        let other = other.map(|l| (l.file(), l.line(), l.column()));
        panic!("{} at {loc}", CheckText { kind, op, a, b, here, other })
    }
}
