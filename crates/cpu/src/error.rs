//! What a launch on the CPU device reports when it fails.

use core::fmt;
use core::panic::Location;

use crate::Dim3;

/// A thread of a block, where it waits: the collective or barrier and its call site.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ThreadAt {
    /// `threadIdx` of the thread.
    pub thread: Dim3,
    /// The operation it waits in (`sync_threads`, `shfl`, `grid_sync`, …).
    pub op: &'static str,
    /// Its call site.
    pub site: &'static Location<'static>,
    /// Which call instruction at `site` (0 when unknown): two calls inside one macro expansion
    /// or `#[track_caller]` helper share a site and differ here.
    pub instruction: u64,
}

impl fmt::Display for ThreadAt {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "thread {} at `{}` ({})", self.thread, self.op, self.site)
    }
}

/// What a report adds when two threads wait at different calls of one source location.
fn same_site_note(site: &Location<'_>) -> String {
    format!("; two calls inside one macro expansion or `#[track_caller]` helper at {site} diverged")
}

/// Where a lane that a warp collective waits for is instead.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Elsewhere {
    /// It returned from the kernel.
    Exited,
    /// It waits at another operation or call site.
    At {
        /// The operation.
        op: &'static str,
        /// Its call site.
        site: &'static Location<'static>,
    },
    /// It waits at another call instruction of the same call site: a second call inside the
    /// same macro expansion or `#[track_caller]` helper.
    SameSite {
        /// The operation.
        op: &'static str,
    },
}

impl fmt::Display for Elsewhere {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Exited => f.write_str("exited"),
            Self::At { op, site } => write!(f, "at `{op}` ({site})"),
            Self::SameSite { op } => write!(f, "at another call of `{op}` with the same source location"),
        }
    }
}

/// Why a launch on the CPU device failed. Every variant names the block (and thread or
/// lanes) and, where there is one, the call site; [`Display`](fmt::Display) writes one line.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum CpuError {
    /// The launch's shape or resources are impossible (a zero extent, more than 1024 threads
    /// per block, more dynamic shared memory than a block has, …).
    InvalidLaunch {
        /// What is wrong, with the limit.
        reason: String,
    },
    /// A cooperative launch of more blocks than the CPU device declares co-resident
    /// ([`max_coresident_blocks`](crate::max_coresident_blocks)).
    CooperativeTooLarge {
        /// Blocks asked for.
        blocks: u64,
        /// Threads per block.
        block_threads: u32,
        /// Blocks of that size the CPU device runs at once.
        limit: u64,
    },
    /// A thread of the kernel panicked.
    Panic {
        /// `blockIdx` of the panicking thread.
        block: Dim3,
        /// `threadIdx` of the panicking thread.
        thread: Dim3,
        /// Where it panicked: file, line, column (`None` when the panic hook was replaced by
        /// someone else after the engine installed its own).
        location: Option<(String, u32, u32)>,
        /// The panic message.
        message: String,
    },
    /// Every live thread of a block waits, but at different barriers (or at a barrier and at a
    /// grid sync): on a GPU the block hangs or misbehaves.
    BarrierMismatch {
        /// `blockIdx`.
        block: Dim3,
        /// A thread at one barrier.
        first: ThreadAt,
        /// A thread at another.
        second: ThreadAt,
    },
    /// Threads of a block wait at a block barrier (or a grid sync) that a thread of the block
    /// will never reach: it returned from the kernel.
    ExitedAtBarrier {
        /// `blockIdx`.
        block: Dim3,
        /// A waiting thread.
        waiting: ThreadAt,
        /// `threadIdx` of a thread that exited.
        exited: Dim3,
    },
    /// A named barrier (`bar.sync id, count`) that fewer than `count` threads reach.
    NamedBarrierStuck {
        /// `blockIdx`.
        block: Dim3,
        /// Barrier id.
        id: u32,
        /// Threads it waits for.
        count: u32,
        /// Threads that arrived.
        arrived: u32,
        /// One of them.
        waiting: ThreadAt,
    },
    /// A warp collective whose mask names a lane that is not at the same call: the GPU's
    /// checked mode reports the same (`divergence: …`).
    WarpDivergence {
        /// `blockIdx`.
        block: Dim3,
        /// The warp in the block.
        warp: u32,
        /// The collective.
        op: &'static str,
        /// Its call site.
        site: &'static Location<'static>,
        /// The lanes it names.
        mask: u32,
        /// The lanes of `mask` that reached this call.
        arrived: u32,
        /// A lane of `mask` that did not.
        lane: u32,
        /// Where that lane is.
        elsewhere: Elsewhere,
    },
    /// An operation used against its contract (the calling lane not in its mask, lanes of one
    /// collective passing different masks or types, a shuffle reading a lane outside the mask,
    /// grid sync outside a cooperative launch, a collective in a fast-path launch, …).
    Misuse {
        /// `blockIdx`.
        block: Dim3,
        /// `threadIdx` of the thread concerned.
        thread: Dim3,
        /// The operation.
        op: &'static str,
        /// Its call site.
        site: &'static Location<'static>,
        /// What is wrong.
        reason: String,
    },
    /// Blocks of a cooperative launch at different grid syncs (another call site, or another
    /// call inside the same macro expansion or `#[track_caller]` helper; a `GridVec` phase
    /// change is a grid sync too): on a GPU they would pass each other's barrier.
    GridSyncMismatch {
        /// A block, and the grid sync it waits at.
        first_block: Dim3,
        /// That grid sync (the operation, its call site, its call instruction).
        first: (&'static str, &'static Location<'static>, u64),
        /// A block at another grid sync.
        second_block: Dim3,
        /// That other grid sync.
        second: (&'static str, &'static Location<'static>, u64),
    },
    /// A block exited while other blocks wait at a grid sync.
    GridSyncExited {
        /// A block waiting at the grid sync.
        waiting_block: Dim3,
        /// The grid sync's call site.
        site: &'static Location<'static>,
        /// A block that exited instead.
        exited_block: Dim3,
    },
    /// A thread kept spinning ([`yield_now`](crate::yield_now)) for longer than the launch's
    /// [`spin_limit`](crate::LaunchSpec::spin_limit) while no thread of its block made other
    /// progress: a spin-wait that nothing will release (a livelock).
    SpinTimeout {
        /// `blockIdx`.
        block: Dim3,
        /// `threadIdx` of a spinning thread.
        thread: Dim3,
        /// Where it spins.
        site: &'static Location<'static>,
        /// The limit, in milliseconds.
        millis: u64,
    },
    /// Two threads of a block accessed the same shared-memory byte between two barriers, at
    /// least one of them writing (race check only).
    SharedRace {
        /// `blockIdx`.
        block: Dim3,
        /// Shared-window address of the byte.
        addr: u32,
        /// The earlier access: thread, whether it wrote, site.
        first: (Dim3, bool, &'static Location<'static>),
        /// The later access.
        second: (Dim3, bool, &'static Location<'static>),
    },
    /// A grid launched from the device (dynamic parallelism) failed: the child kernel, where it
    /// was launched, its shape, and its own error (which may be a grandchild's).
    DeviceLaunch {
        /// The child kernel's entry name.
        kernel: &'static str,
        /// The `launch_from_device` call that launched it.
        site: &'static Location<'static>,
        /// Its grid.
        grid: Dim3,
        /// Its block.
        block: Dim3,
        /// What failed in it.
        error: Box<CpuError>,
    },
}

fn rw(write: bool) -> &'static str {
    if write { "write" } else { "read" }
}

impl fmt::Display for CpuError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::InvalidLaunch { reason } => write!(f, "invalid launch on the CPU device: {reason}"),
            Self::CooperativeTooLarge { blocks, block_threads, limit } => write!(
                f,
                "cooperative launch of {blocks} blocks of {block_threads} threads: the CPU device runs at most {limit} \
                 such blocks at once"
            ),
            Self::Panic { block, thread, location, message } => {
                f.write_str("panicked")?;
                if let Some((file, line, col)) = location {
                    write!(f, " at {file}:{line}:{col}")?;
                }
                write!(f, " in block {block} thread {thread}: {message}")
            }
            Self::BarrierMismatch { block, first, second } => {
                write!(
                    f,
                    "deadlock in block {block}: {first} while {second} (every thread of the block must reach the same \
                     barrier"
                )?;
                if first.site == second.site && first.instruction != second.instruction {
                    f.write_str(&same_site_note(first.site))?;
                }
                f.write_str(")")
            }
            Self::ExitedAtBarrier { block, waiting, exited } => write!(
                f,
                "deadlock in block {block}: {waiting} while thread {exited} has exited (every thread of the block must \
                 reach the barrier)"
            ),
            Self::NamedBarrierStuck { block, id, count, arrived, waiting } => write!(
                f,
                "deadlock in block {block}: named barrier {id} waits for {count} threads and only {arrived} arrived \
                 ({waiting})"
            ),
            Self::WarpDivergence { block, warp, op, site, mask, arrived, lane, elsewhere } => {
                write!(
                    f,
                    "divergence: `{op}` of the group of lanes {mask:#010x} was reached at {site} by lanes \
                     {arrived:#010x} only (block {block}, warp {warp}); lane {lane} is {elsewhere} (every member must \
                     make the same call, see `cohort::cg`'s convergence rule"
                )?;
                if matches!(elsewhere, Elsewhere::SameSite { .. }) {
                    f.write_str(&same_site_note(site))?;
                }
                f.write_str(")")
            }
            Self::Misuse { block, thread, op, site, reason } => {
                write!(f, "`{op}` at {site} in block {block} thread {thread}: {reason}")
            }
            Self::GridSyncMismatch { first_block, first, second_block, second } => {
                write!(
                    f,
                    "divergence: block {first_block} waits at `{}` ({}) while block {second_block} waits at `{}` ({}) \
                     (every block must reach the same grid sync",
                    first.0, first.1, second.0, second.1
                )?;
                if first.1 == second.1 {
                    f.write_str(&same_site_note(first.1))?;
                }
                f.write_str(")")
            }
            Self::GridSyncExited { waiting_block, site, exited_block } => write!(
                f,
                "deadlock: block {waiting_block} waits at grid sync ({site}) while block {exited_block} has exited \
                 (every block must reach the grid sync)"
            ),
            Self::SpinTimeout { block, thread, site, millis } => write!(
                f,
                "livelock in block {block}: thread {thread} spun at {site} for {millis} ms while no thread of the \
                 block made other progress (a spin-wait nothing releases)"
            ),
            Self::SharedRace { block, addr, first, second } => write!(
                f,
                "shared-memory race in block {block} at address {addr:#x}: {} by thread {} ({}) and {} by thread {} \
                 ({}) with no barrier between them",
                rw(first.1),
                first.0,
                first.2,
                rw(second.1),
                second.0,
                second.2
            ),
            Self::DeviceLaunch { kernel, site, grid, block, error } => write!(
                f,
                "child kernel `{kernel}` (grid {grid}, block {block}) launched from the device at {site} failed: \
                 {error}"
            ),
        }
    }
}

impl std::error::Error for CpuError {}
