//! The collectives: all-reduce, broadcast, all-gather, reduce-scatter, on a [`Comm`] alone (a
//! group of one operation) or added to a [`Group`].

use super::comm::Comm;
use super::error::NcclResult;
use super::group::{Group, Kind, dst, single, src};
use super::types::{NcclType, ReduceOp};
use crate::stream::Stream;
use crate::track::{CopyDst, CopySrc};

impl Comm {
    /// All-reduce `send` into `recv` (same length) with `op`, on `stream`.
    ///
    /// # Errors
    /// [`Error::Argument`](crate::Error::Argument) for lengths that differ, or a buffer or
    /// stream of another GPU; an NCCL failure.
    pub fn all_reduce<T: NcclType>(
        &self,
        stream: &Stream,
        send: impl CopySrc<T>,
        recv: impl CopyDst<T>,
        op: ReduceOp,
    ) -> NcclResult<()> {
        single(|g| g.all_reduce(self, stream, send, recv, op))
    }

    /// All-reduce `buf` in place with `op`, on `stream`.
    ///
    /// # Errors
    /// As [`Comm::all_reduce`].
    pub fn all_reduce_in_place<T: NcclType>(
        &self,
        stream: &Stream,
        buf: impl CopyDst<T>,
        op: ReduceOp,
    ) -> NcclResult<()> {
        single(|g| g.all_reduce_in_place(self, stream, buf, op))
    }

    /// Broadcast rank `root`'s `send` into every rank's `recv` (same length; `send` is read
    /// only on the root).
    ///
    /// # Errors
    /// As [`Comm::all_reduce`], and `root` out of range.
    pub fn broadcast<T: NcclType>(
        &self,
        stream: &Stream,
        send: impl CopySrc<T>,
        recv: impl CopyDst<T>,
        root: usize,
    ) -> NcclResult<()> {
        single(|g| g.broadcast(self, stream, send, recv, root))
    }

    /// Broadcast rank `root`'s `buf` into every rank's `buf`.
    ///
    /// # Errors
    /// As [`Comm::broadcast`].
    pub fn broadcast_in_place<T: NcclType>(
        &self,
        stream: &Stream,
        buf: impl CopyDst<T>,
        root: usize,
    ) -> NcclResult<()> {
        single(|g| g.broadcast_in_place(self, stream, buf, root))
    }

    /// All-gather: `recv` (`size()` × `send.len()` elements) gets every rank's `send`, in
    /// rank order.
    ///
    /// # Errors
    /// As [`Comm::all_reduce`].
    pub fn all_gather<T: NcclType>(
        &self,
        stream: &Stream,
        send: impl CopySrc<T>,
        recv: impl CopyDst<T>,
    ) -> NcclResult<()> {
        single(|g| g.all_gather(self, stream, send, recv))
    }

    /// Reduce-scatter: `send` (`size()` × `recv.len()` elements) is reduced across ranks with
    /// `op`, and rank `r` gets block `r` of the result in `recv`.
    ///
    /// # Errors
    /// As [`Comm::all_reduce`].
    pub fn reduce_scatter<T: NcclType>(
        &self,
        stream: &Stream,
        send: impl CopySrc<T>,
        recv: impl CopyDst<T>,
        op: ReduceOp,
    ) -> NcclResult<()> {
        single(|g| g.reduce_scatter(self, stream, send, recv, op))
    }
}

impl<'a> Group<'a> {
    /// Adds [`Comm::all_reduce`].
    ///
    /// # Errors
    /// As [`Comm::all_reduce`].
    pub fn all_reduce<T: NcclType>(
        &mut self,
        comm: &'a Comm,
        stream: &'a Stream,
        send: impl CopySrc<T> + 'a,
        recv: impl CopyDst<T> + 'a,
        op: ReduceOp,
    ) -> NcclResult<()> {
        self.push::<T>(comm, stream, Kind::AllReduce(op), src(send), dst(recv))
    }

    /// Adds [`Comm::all_reduce_in_place`].
    ///
    /// # Errors
    /// As [`Comm::all_reduce`].
    pub fn all_reduce_in_place<T: NcclType>(
        &mut self,
        comm: &'a Comm,
        stream: &'a Stream,
        buf: impl CopyDst<T> + 'a,
        op: ReduceOp,
    ) -> NcclResult<()> {
        self.push::<T>(comm, stream, Kind::AllReduce(op), None, dst(buf))
    }

    /// Adds [`Comm::broadcast`].
    ///
    /// # Errors
    /// As [`Comm::broadcast`].
    pub fn broadcast<T: NcclType>(
        &mut self,
        comm: &'a Comm,
        stream: &'a Stream,
        send: impl CopySrc<T> + 'a,
        recv: impl CopyDst<T> + 'a,
        root: usize,
    ) -> NcclResult<()> {
        self.push::<T>(comm, stream, Kind::Broadcast(root), src(send), dst(recv))
    }

    /// Adds [`Comm::broadcast_in_place`].
    ///
    /// # Errors
    /// As [`Comm::broadcast`].
    pub fn broadcast_in_place<T: NcclType>(
        &mut self,
        comm: &'a Comm,
        stream: &'a Stream,
        buf: impl CopyDst<T> + 'a,
        root: usize,
    ) -> NcclResult<()> {
        self.push::<T>(comm, stream, Kind::Broadcast(root), None, dst(buf))
    }

    /// Adds [`Comm::all_gather`].
    ///
    /// # Errors
    /// As [`Comm::all_gather`].
    pub fn all_gather<T: NcclType>(
        &mut self,
        comm: &'a Comm,
        stream: &'a Stream,
        send: impl CopySrc<T> + 'a,
        recv: impl CopyDst<T> + 'a,
    ) -> NcclResult<()> {
        self.push::<T>(comm, stream, Kind::AllGather, src(send), dst(recv))
    }

    /// Adds [`Comm::reduce_scatter`].
    ///
    /// # Errors
    /// As [`Comm::reduce_scatter`].
    pub fn reduce_scatter<T: NcclType>(
        &mut self,
        comm: &'a Comm,
        stream: &'a Stream,
        send: impl CopySrc<T> + 'a,
        recv: impl CopyDst<T> + 'a,
        op: ReduceOp,
    ) -> NcclResult<()> {
        self.push::<T>(comm, stream, Kind::ReduceScatter(op), src(send), dst(recv))
    }
}
