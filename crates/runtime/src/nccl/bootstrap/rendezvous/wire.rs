//! The messages: a rank's hello, rank 0's answers (see the module docs for their layout).

use std::io::{self, Read};
use std::net::TcpStream;
use std::time::Instant;

use super::{PORT_VAR, PROTOCOL, Rendezvous, remaining};
use crate::nccl::ID_BYTES;

/// What every message starts with.
pub(super) const MAGIC: [u8; 8] = *b"CohortRV";
/// A hello up to the token.
pub(super) const HELLO_FIXED: usize = 8 + 2 + 2 + 4 + 4 + 2;
/// An answer up to its payload.
pub(super) const ANSWER_FIXED: usize = 8 + 2 + 1;
pub(super) const JOINED: u8 = 1;
pub(super) const ID: u8 = 2;
pub(super) const REFUSED: u8 = 3;
/// The longest refusal read.
pub(super) const MAX_MESSAGE: usize = 4096;

impl Rendezvous {
    /// Rank `rank`'s hello.
    pub(super) fn hello(&self, rank: usize) -> Vec<u8> {
        let mut h = Vec::with_capacity(HELLO_FIXED + self.token.len());
        h.extend_from_slice(&MAGIC);
        h.extend_from_slice(&PROTOCOL.to_be_bytes());
        h.extend_from_slice(&0u16.to_be_bytes());
        // `check` keeps both in range.
        h.extend_from_slice(&(self.world_size as u32).to_be_bytes());
        h.extend_from_slice(&(rank as u32).to_be_bytes());
        h.extend_from_slice(&(self.token.len() as u16).to_be_bytes());
        h.extend_from_slice(self.token.as_bytes());
        h
    }
}

/// What rank 0 answers a rank that joins.
pub(super) enum Answer {
    Joined,
    Id([u8; ID_BYTES]),
    Refused(String),
}

/// Why an answer could not be read.
pub(super) enum ReadError {
    Closed,
    TimedOut,
    Io(io::Error),
    Foreign(String),
}

/// Fills `buf` from `s` by `deadline`.
pub(super) fn read_until(s: &mut TcpStream, buf: &mut [u8], deadline: Instant) -> Result<(), ReadError> {
    let mut filled = 0;
    while filled < buf.len() {
        if Instant::now() >= deadline {
            return Err(ReadError::TimedOut);
        }
        s.set_read_timeout(Some(remaining(deadline))).map_err(ReadError::Io)?;
        match s.read(&mut buf[filled..]) {
            Ok(0) => return Err(ReadError::Closed),
            Ok(n) => filled += n,
            Err(e) if matches!(e.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut) => {}
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) if matches!(e.kind(), io::ErrorKind::ConnectionReset | io::ErrorKind::ConnectionAborted) => {
                return Err(ReadError::Closed);
            }
            Err(e) => return Err(ReadError::Io(e)),
        }
    }
    Ok(())
}

/// Reads one answer of rank 0.
pub(super) fn read_answer(s: &mut TcpStream, deadline: Instant) -> Result<Answer, ReadError> {
    let mut head = [0u8; ANSWER_FIXED];
    read_until(s, &mut head, deadline)?;
    if head[..8] != MAGIC {
        return Err(ReadError::Foreign(format!(
            "what answered there is not a Cohort rank 0 (it sent {:?}): is another service using that port? \
             (torchrun's own store listens on MASTER_PORT; {PORT_VAR} moves Cohort's rendezvous)",
            String::from_utf8_lossy(&head)
        )));
    }
    let version = u16::from_be_bytes([head[8], head[9]]);
    match head[10] {
        REFUSED => {
            let mut len = [0u8; 2];
            read_until(s, &mut len, deadline)?;
            let mut text = vec![0u8; usize::from(u16::from_be_bytes(len)).min(MAX_MESSAGE)];
            read_until(s, &mut text, deadline)?;
            Ok(Answer::Refused(String::from_utf8_lossy(&text).into_owned()))
        }
        _ if version != PROTOCOL => Err(ReadError::Foreign(format!(
            "rank 0 speaks version {version} of Cohort's rendezvous, this rank version {PROTOCOL}: run the same Cohort \
             on every rank"
        ))),
        JOINED => Ok(Answer::Joined),
        ID => {
            let mut id = [0u8; ID_BYTES];
            read_until(s, &mut id, deadline)?;
            Ok(Answer::Id(id))
        }
        kind => Err(ReadError::Foreign(format!("rank 0 sent an answer of unknown kind {kind}"))),
    }
}

/// An answer of `kind` with `payload`.
pub(super) fn answer(kind: u8, payload: &[u8]) -> Vec<u8> {
    let mut a = Vec::with_capacity(ANSWER_FIXED + payload.len());
    a.extend_from_slice(&MAGIC);
    a.extend_from_slice(&PROTOCOL.to_be_bytes());
    a.push(kind);
    a.extend_from_slice(payload);
    a
}

/// A refusal saying `message` (cut at [`MAX_MESSAGE`] bytes).
pub(super) fn refusal(message: &str) -> Vec<u8> {
    let mut text = message.as_bytes();
    if text.len() > MAX_MESSAGE {
        text = &text[..MAX_MESSAGE];
    }
    let mut payload = (text.len() as u16).to_be_bytes().to_vec();
    payload.extend_from_slice(text);
    answer(REFUSED, &payload)
}
