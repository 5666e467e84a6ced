//! Groups of operations ([`Group`]): each operation checked as it is added (its buffers, its
//! stream, its lengths, its ranks); [`enqueue`](super::enqueue) runs them.

use std::ffi::c_int;
use std::fmt;
use std::marker::PhantomData;

use super::comm::Comm;
use super::error::{NcclResult, arg};
use super::ledger::{Call, CallKind};
use super::types::{NcclType, ReduceOp};
use crate::stream::Stream;
use crate::track::{AllocKind, CopyDst, CopySrc, Use};

/// Runs one operation as a group of its own (what each [`Comm`] method is).
pub(super) fn single<'a>(op: impl FnOnce(&mut Group<'a>) -> NcclResult<()>) -> NcclResult<()> {
    let mut g = Group::new();
    op(&mut g)?;
    g.run()
}

/// An operand, its element type erased: makes its [`Use`] when the group runs.
pub(super) trait Operand {
    fn get(&self) -> Use<'_>;
}

/// `send` as the operand read.
pub(super) fn src<'a, T: 'a>(send: impl CopySrc<T> + 'a) -> Option<Box<dyn Operand + 'a>> {
    Some(Box::new(Src(send, PhantomData)))
}

/// `recv` as the operand written.
pub(super) fn dst<'a, T: 'a>(recv: impl CopyDst<T> + 'a) -> Option<Box<dyn Operand + 'a>> {
    Some(Box::new(Dst(recv, PhantomData)))
}

pub(super) struct Src<S, T>(S, PhantomData<fn() -> T>);
impl<T, S: CopySrc<T>> Operand for Src<S, T> {
    fn get(&self) -> Use<'_> {
        self.0.use_read()
    }
}

pub(super) struct Dst<D, T>(D, PhantomData<fn() -> T>);
impl<T, D: CopyDst<T>> Operand for Dst<D, T> {
    fn get(&self) -> Use<'_> {
        self.0.use_write()
    }
}

#[derive(Clone, Copy)]
pub(super) enum Kind {
    AllReduce(ReduceOp),
    Broadcast(usize),
    AllGather,
    ReduceScatter(ReduceOp),
    Send(usize),
    Recv(usize),
}

impl Kind {
    /// The method's name, for errors.
    fn name(self) -> &'static str {
        match self {
            Kind::AllReduce(_) => "all_reduce",
            Kind::Broadcast(_) => "broadcast",
            Kind::AllGather => "all_gather",
            Kind::ReduceScatter(_) => "reduce_scatter",
            Kind::Send(_) => "send",
            Kind::Recv(_) => "recv",
        }
    }
}

pub(super) struct Op<'a> {
    pub(super) comm: &'a Comm,
    pub(super) stream: &'a Stream,
    pub(super) kind: Kind,
    pub(super) dtype: c_int,
    /// Elements (NCCL's count: per rank for all-gather's send, reduce-scatter's recv).
    pub(super) count: usize,
    /// The operand read, if not in place.
    pub(super) send: Option<Box<dyn Operand + 'a>>,
    /// The operand written (or read and written in place; for `Send`, absent).
    pub(super) recv: Option<Box<dyn Operand + 'a>>,
}

impl Op<'_> {
    /// The call, as compared across ranks.
    pub(super) fn call(&self) -> Call {
        let kind = match self.kind {
            Kind::AllReduce(op) => CallKind::AllReduce(op),
            Kind::Broadcast(root) => CallKind::Broadcast { root },
            Kind::AllGather => CallKind::AllGather,
            Kind::ReduceScatter(op) => CallKind::ReduceScatter(op),
            Kind::Send(p) => CallKind::Send(p),
            Kind::Recv(p) => CallKind::Recv(p),
        };
        Call { kind, dtype: self.dtype, count: self.count }
    }
}

/// Several NCCL operations enqueued together (`ncclGroupStart` … `ncclGroupEnd`), e.g. one
/// all-reduce per GPU from one thread, or matching sends and receives.
///
/// Operations are checked as they are added and enqueued by [`Group::run`]; the buffers stay
/// borrowed until then.
///
/// ```no_run
/// # use cohort_runtime::{Gpu, nccl::{Comm, Group, ReduceOp}};
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let gpus = (0..Gpu::count()?).map(Gpu::new).collect::<Result<Vec<_>, _>>()?;
/// let comms = Comm::for_gpus(&gpus)?;
/// let mut bufs = gpus.iter().map(|g| g.upload(&[1.0f32; 1024])).collect::<Result<Vec<_>, _>>()?;
/// let mut group = Group::new();
/// for ((c, g), b) in comms.iter().zip(&gpus).zip(&mut bufs) {
///     group.all_reduce_in_place(c, g.stream(), b, ReduceOp::Sum)?;
/// }
/// group.run()?;
/// assert!(bufs[0].to_vec()?.iter().all(|&x| x == gpus.len() as f32));
/// # Ok(()) }
/// ```
#[derive(Default)]
pub struct Group<'a> {
    pub(super) ops: Vec<Op<'a>>,
}

impl fmt::Debug for Group<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Group").field("ops", &self.ops.len()).finish()
    }
}

fn elems<T>(u: &Use<'_>) -> usize {
    (u.end - u.start) / size_of::<T>().max(1)
}

impl<'a> Group<'a> {
    /// An empty group.
    #[must_use]
    pub fn new() -> Self {
        Self { ops: Vec::new() }
    }

    /// The number of operations added.
    #[must_use]
    pub fn len(&self) -> usize {
        self.ops.len()
    }

    /// Whether no operation was added.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.ops.is_empty()
    }

    fn check_operand(comm: &Comm, u: &Use<'_>, what: &str) -> NcclResult<()> {
        if !AllocKind::device_only(u.alloc.kind) {
            return Err(arg(format!(
                "NCCL: the {what} buffer is host memory (pinned or registered) or managed memory; NCCL needs device memory"
            )));
        }
        if u.alloc.gpu.cu_ctx() != comm.gpu.inner.cu_ctx() {
            return Err(arg(format!(
                "NCCL: the {what} buffer belongs to another GPU (or CUDA context) than rank {}'s device {}",
                comm.rank,
                comm.gpu.info().ordinal
            )));
        }
        Ok(())
    }

    pub(super) fn push<T: NcclType>(
        &mut self,
        comm: &'a Comm,
        stream: &'a Stream,
        kind: Kind,
        send: Option<Box<dyn Operand + 'a>>,
        recv: Option<Box<dyn Operand + 'a>>,
    ) -> NcclResult<()> {
        let name = kind.name();
        if stream.inner.gpu.cu_ctx() != comm.gpu.inner.cu_ctx() {
            return Err(arg(format!(
                "NCCL {name}: the stream belongs to another GPU (or CUDA context) than rank {}'s device {}",
                comm.rank,
                comm.gpu.info().ordinal
            )));
        }
        let n = comm.size;
        let s = send.as_ref().map(|o| o.get());
        let r = recv.as_ref().map(|o| o.get());
        if let Some(s) = &s {
            Self::check_operand(comm, s, "send")?;
        }
        if let Some(r) = &r {
            Self::check_operand(comm, r, "receive")?;
        }
        let (sl, rl) = (s.as_ref().map(elems::<T>), r.as_ref().map(elems::<T>));
        let count = match (kind, sl, rl) {
            (Kind::AllReduce(_) | Kind::Broadcast(_), Some(a), Some(b)) if a != b => {
                return Err(arg(format!(
                    "NCCL {name}: the send buffer has {a} elements, the receive buffer {b} (they must be equal)"
                )));
            }
            (Kind::AllGather, Some(a), Some(b)) if b != a * n => {
                return Err(arg(format!(
                    "NCCL {name}: the receive buffer has {b} elements; {n} ranks × {a} sent need {}",
                    a * n
                )));
            }
            (Kind::ReduceScatter(_), Some(a), Some(b)) if a != b * n => {
                return Err(arg(format!(
                    "NCCL {name}: the send buffer has {a} elements; {n} ranks × {b} received need {}",
                    b * n
                )));
            }
            (Kind::AllGather, Some(a), _) => a,
            (_, _, Some(b)) => b,
            (_, Some(a), None) => a,
            (_, None, None) => 0,
        };
        match kind {
            Kind::Broadcast(p) | Kind::Send(p) | Kind::Recv(p) if p >= n => {
                return Err(arg(format!("NCCL {name}: rank {p} is out of range for {n} ranks")));
            }
            _ => {}
        }
        self.ops.push(Op { comm, stream, kind, dtype: T::DTYPE, count, send, recv });
        Ok(())
    }
}
