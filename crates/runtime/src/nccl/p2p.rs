//! Point-to-point: [`Comm::send`] and [`Comm::recv`], alone or in a [`Group`].

use super::comm::Comm;
use super::error::NcclResult;
use super::group::{Group, Kind, dst, single, src};
use super::types::NcclType;
use crate::stream::Stream;
use crate::track::{CopyDst, CopySrc};

impl Comm {
    /// Sends `send` to rank `peer`, which must post a [`Comm::recv`] of the same length.
    /// Alone, it blocks until the peer has posted its receive: pair sends and receives of one
    /// thread in a [`Group`].
    ///
    /// # Errors
    /// As [`Comm::all_reduce`], and `peer` out of range.
    pub fn send<T: NcclType>(&self, stream: &Stream, send: impl CopySrc<T>, peer: usize) -> NcclResult<()> {
        single(|g| g.send(self, stream, send, peer))
    }

    /// Receives `recv` from rank `peer`'s [`Comm::send`].
    ///
    /// # Errors
    /// As [`Comm::send`].
    pub fn recv<T: NcclType>(&self, stream: &Stream, recv: impl CopyDst<T>, peer: usize) -> NcclResult<()> {
        single(|g| g.recv(self, stream, recv, peer))
    }
}

impl<'a> Group<'a> {
    /// Adds [`Comm::send`].
    ///
    /// # Errors
    /// As [`Comm::send`].
    pub fn send<T: NcclType>(
        &mut self,
        comm: &'a Comm,
        stream: &'a Stream,
        send: impl CopySrc<T> + 'a,
        peer: usize,
    ) -> NcclResult<()> {
        self.push::<T>(comm, stream, Kind::Send(peer), src(send), None)
    }

    /// Adds [`Comm::recv`].
    ///
    /// # Errors
    /// As [`Comm::recv`].
    pub fn recv<T: NcclType>(
        &mut self,
        comm: &'a Comm,
        stream: &'a Stream,
        recv: impl CopyDst<T> + 'a,
        peer: usize,
    ) -> NcclResult<()> {
        self.push::<T>(comm, stream, Kind::Recv(peer), None, dst(recv))
    }
}
