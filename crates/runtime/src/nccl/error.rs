//! [`NcclError`], what every NCCL call of Cohort returns.

use std::fmt;

use super::library::HOW_TO_GET;
use crate::error::Error;

/// What can go wrong with NCCL.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum NcclError {
    /// The NCCL library could not be loaded (the reasons of each attempt).
    NotFound(String),
    /// An NCCL call failed.
    Call {
        /// What Cohort was doing.
        what: String,
        /// The `ncclResult_t`.
        code: i32,
        /// NCCL's description of it and its last error message.
        message: String,
    },
    /// Exchanging the unique id (through a file, or over TCP:
    /// [`Rendezvous`](super::Rendezvous)) failed or timed out; the message says what was
    /// missing.
    IdExchange(String),
    /// The launcher's environment does not describe a rank of a job
    /// ([`Launch::from_env`](super::Launch::from_env)): the message names the variable and what
    /// to set.
    Launch(String),
    /// Ranks of one communicator in this process made calls that disagree (the collective,
    /// its element type, count, operator or root; a send and its receive), or a call needs a
    /// rank whose communicator was dropped: refused before NCCL saw it. The message names the
    /// ranks, the call's number and what differs, and whether the communicator was aborted
    /// (when another rank's call was enqueued already and would wait forever).
    Mismatch(String),
    /// The communicator was aborted (a mismatch, a deadline passed, an NCCL error, a rank
    /// dropped): this call, and every later one, is refused; the message says why.
    Aborted(String),
    /// A Cohort error: an argument (lengths, a buffer of another GPU), a driver failure.
    Cohort(Error),
}

impl fmt::Display for NcclError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NcclError::NotFound(why) => write!(f, "NCCL (libnccl.so.2) not found: {why}; {HOW_TO_GET}"),
            NcclError::Call { what, code, message } => write!(f, "NCCL failed {what}: error {code}: {message}"),
            NcclError::IdExchange(m) => write!(f, "NCCL unique id exchange: {m}"),
            NcclError::Launch(m) => write!(f, "launcher environment: {m}"),
            NcclError::Mismatch(m) | NcclError::Aborted(m) => f.write_str(m),
            NcclError::Cohort(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for NcclError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            NcclError::Cohort(e) => Some(e),
            _ => None,
        }
    }
}

impl From<Error> for NcclError {
    fn from(e: Error) -> Self {
        NcclError::Cohort(e)
    }
}

/// `Result<T, NcclError>`.
pub type NcclResult<T> = std::result::Result<T, NcclError>;

pub(super) fn arg(m: String) -> NcclError {
    NcclError::Cohort(Error::Argument(m))
}
