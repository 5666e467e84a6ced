//! NCCL collectives over Cohort buffers (cargo feature `nccl`).
//!
//! | NCCL | Cohort |
//! |---|---|
//! | `ncclCommInitAll` (one process, one communicator per GPU) | [`Comm::for_gpus`] |
//! | `ncclGetUniqueId`, exchanging it, `ncclCommInitRank` (one process per GPU) | [`NcclId`], [`NcclId::exchange`], [`Comm::from_rank`], [`Comm::from_id_file`] |
//! | the same under `torchrun`, `srun`, `mpirun` (rank from the environment, the id over TCP) | [`Comm::from_env`], [`Launch`], [`Rendezvous`], [`NcclId::exchange_tcp`] ([`bootstrap`]) |
//! | `ncclAllReduce` (`ncclSum`, `ncclProd`, `ncclMin`, `ncclMax`, `ncclAvg`) | [`Comm::all_reduce`], [`Comm::all_reduce_in_place`], [`ReduceOp`] |
//! | `ncclBroadcast` | [`Comm::broadcast`], [`Comm::broadcast_in_place`] |
//! | `ncclAllGather`, `ncclReduceScatter` | [`Comm::all_gather`], [`Comm::reduce_scatter`] |
//! | `ncclSend`, `ncclRecv` | [`Comm::send`], [`Comm::recv`] |
//! | `ncclGroupStart` … `ncclGroupEnd` | [`Group`] ([`Group::run`]) |
//!
//! # Stream-ordered safety
//!
//! A collective reads its send buffer and writes its receive buffer asynchronously on the
//! stream it is given, exactly like [`Stream::copy`](crate::Stream::copy): it first makes that
//! stream wait for the conflicting work of other streams on those byte ranges, and is then
//! recorded on the buffers, so that later kernels, copies, host reads and frees wait for it.
//! Send buffers are borrowed shared (`&DeviceBuffer`, a [`DeviceView`](crate::DeviceView)),
//! receive buffers exclusively (`&mut DeviceBuffer`, a
//! [`DeviceViewMut`](crate::DeviceViewMut)). Every length is checked before NCCL sees it
//! ([`Error::Argument`](crate::Error::Argument)), buffers must be device memory of the
//! communicator's GPU, and the stream a stream of that GPU.
//!
//! A [`Group`] enqueues several operations as one NCCL group (needed when one thread drives
//! several GPUs: NCCL may block in each call until every rank has called). Its operations are
//! ordered through the first operation's stream: the other streams wait for it before the
//! group and it waits for them after, so the tracker can record the whole group as one
//! operation of that stream (one lock of every buffer's record, in address order: no
//! deadlock between threads). With a single stream this costs no event.
//!
//! # Which NCCL
//!
//! NCCL is loaded when first used, from `COHORT_NCCL` (a path to the library) if set, else
//! `libnccl.so.2` then `libnccl.so` through the usual library search (`LD_LIBRARY_PATH`,
//! `ldconfig`). NCCL's Python wheel (`pip install nvidia-nccl-cu13`; PyTorch's wheels depend
//! on it) ships `lib/libnccl.so.2`. Without it every call returns [`NcclError::NotFound`]
//! saying how to get it; nothing else in Cohort needs NCCL. (cudarc's own NCCL loader panics
//! when the library is missing and does not look for `libnccl.so.2`, so Cohort loads the few
//! entry points it uses itself.)
//!
//! # NVLink multicast stays off
//!
//! Before NCCL is loaded, Cohort sets `NCCL_NVLS_ENABLE=0` unless the variable is already set:
//! NVLink SHARP (multicast objects over NVSwitch) on shared hosts can put GPUs out of service
//! for every tenant when a job dies with multicast memory mapped, and all-reduce reaches
//! nearly the same bus bandwidth without it on the machines Cohort is tested on. Set
//! `NCCL_NVLS_ENABLE=1` yourself to opt in. Setting a variable races with other threads reading
//! the environment outside Rust's lock (C code calling `getenv`), so a program with threads
//! should call [`available`] (which loads NCCL) at its start, before it spawns them.
//!
//! # Ranks of one process
//!
//! NCCL wants every rank of a communicator to make the same collectives in the same order
//! (same element type, count, operator, root) and every send to meet a receive of the same
//! type and count; otherwise it hangs, or moves more data than a buffer holds. Cohort compares
//! the calls of the ranks that live in this process before NCCL sees them: the ranks of
//! [`Comm::for_gpus`], and every rank made by [`Comm::from_rank`] with one id in this process
//! (several threads each holding a rank). Each rank's collectives are numbered in the order
//! it makes them, and so are the sends from each rank to each other and the receives; the
//! `k`-th collective of every local rank must be the same call, the `i`-th send from `r` to
//! `p` and the `i`-th receive of `p` from `r` must agree. Nothing waits for the other ranks:
//! the first rank to make call `k` goes on to NCCL, and each other rank's call `k` is
//! compared with it when it comes. So one thread may issue rank 0's call, then rank 1's (in a
//! [`Group`], as NCCL wants), and two threads may each drive a rank.
//!
//! A call that disagrees is refused ([`NcclError::Mismatch`], naming both ranks, the call's
//! number and the fields that differ), before NCCL sees it. If the other rank's call was
//! enqueued already (by another thread), that rank would wait for it forever: the
//! communicator is aborted, so that rank's stream waits fail
//! ([`Error::CollectiveAborted`](crate::Error::CollectiveAborted), with the same reason) and
//! its later calls are refused ([`NcclError::Aborted`]). A call that needs a rank of this
//! process whose `Comm` was dropped is refused too. Ranks in other processes are not seen:
//! for them, the deadline below is what ends a mismatch.
//!
//! # Hangs
//!
//! Communicators are non-blocking (`ncclCommInitRankConfig` with `blocking = 0`, NCCL 2.14 and
//! later): no NCCL call waits inside NCCL for other ranks, so any communicator can be aborted
//! at any time. Cohort waits for each call to finish enqueueing (`ncclCommGetAsyncError`), and
//! a process-wide watchdog thread watches every enqueued operation: an event recorded before it
//! and one after it on its stream. Creating a communicator, enqueueing an operation, and an
//! operation that has begun on the GPU (its first event completed) each get a deadline,
//! [`timeout`]: `COHORT_NCCL_TIMEOUT` seconds if set, else [`DEFAULT_TIMEOUT`] (5 minutes: long
//! enough for a rank to wait while another writes a checkpoint), per communicator
//! [`Comm::set_timeout`]. Past it, or when NCCL reports an error, every rank of the
//! communicator in this process is aborted (`ncclCommAbort`, which stops the kernels still
//! running): the operations not yet finished fail, each stream they ran on reports it from its
//! waits — [`Stream::synchronize`](crate::Stream::synchronize),
//! [`Stream::query`](crate::Stream::query), and host accesses of the memory they wrote
//! ([`Error::CollectiveAborted`](crate::Error::CollectiveAborted), naming the operation, the
//! ranks and the deadline; a host access or `query` reports it again until a `synchronize` of
//! the stream has) — and every later call on the communicator is refused
//! ([`NcclError::Aborted`]). Buffers are freed normally after an abort. Events and
//! [`Gpu::synchronize`](crate::Gpu::synchronize) do not report it. A collective needs a stream
//! of its own (not the legacy or per-thread default stream), whose waits can report it, and is
//! not captured into a graph (a replay could not be watched).
//!
//! With an NCCL older than 2.14, or `NCCL_COMM_BLOCKING=1`, communicators are blocking: a call
//! may wait inside NCCL for the other ranks (creating a communicator, the first exchange with
//! a peer), and no deadline ends that wait; the watchdog still bounds operations running on
//! the GPU.
//!
//! # Dropping communicators
//!
//! The communicators made by one call ([`Comm::for_gpus`], or one [`Comm::from_rank`]) are
//! aborted together (`ncclCommAbort`, each on a thread of its own, as it may wait for the
//! node's other ranks) when the last of them is dropped; their operations that had not
//! finished fail (their streams' waits say so). Synchronize the streams first if their
//! collectives must complete; buffers stay safe either way (they wait for the recorded
//! operations before being freed or read).
//!
//! # Files
//!
//! | file | what |
//! |---|---|
//! | `library.rs` | loading NCCL, its entry points, its result codes |
//! | `error.rs` | [`NcclError`] |
//! | `types.rs` | [`NcclType`], [`ReduceOp`] |
//! | `id.rs` | [`NcclId`] and its exchange through a file |
//! | `comm.rs` | [`Comm`]: what it holds, dropping it |
//! | `create.rs` | making communicators; the CPU-device and primary-context check |
//! | `collective.rs` | all-reduce, broadcast, all-gather, reduce-scatter |
//! | `p2p.rs` | send, receive |
//! | `group.rs` | [`Group`]: operations checked as they are added |
//! | `enqueue.rs` | [`Group::run`]: matching, stream order, enqueueing |
//! | `ledger.rs` | the calls of the ranks of this process, compared |
//! | `watch/` | the deadline, aborting, the watchdog thread |
//! | `bootstrap/` | ranks from a launcher's environment, the id over TCP |

pub mod bootstrap;
mod collective;
mod comm;
mod create;
mod enqueue;
mod error;
mod group;
mod id;
mod ledger;
mod library;
mod p2p;
#[cfg(test)]
mod tests;
mod types;
mod watch;

pub use bootstrap::{Endpoint, Launch, Launcher, Rendezvous};
pub use comm::Comm;
pub use error::{NcclError, NcclResult};
pub use group::Group;
pub use id::NcclId;
pub use library::{ID_BYTES, NCCL_PATH_VAR, available, version};
pub use types::{NcclType, ReduceOp};
pub use watch::{DEFAULT_TIMEOUT, TIMEOUT_VAR, timeout};

// For bootstrap, which names these through `super::`.
use create::check_primary;
use library::api;
