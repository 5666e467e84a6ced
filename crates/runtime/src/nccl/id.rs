//! The unique id of a communicator ([`NcclId`]): made by rank 0, exchanged through a file
//! (the TCP exchange is [`bootstrap`](super::bootstrap)'s).

use std::ffi::c_char;
use std::fmt;
use std::path::Path;
use std::time::{Duration, Instant};

use super::error::{NcclError, NcclResult};
use super::library::{ID_BYTES, RawId, api, check};

/// A communicator's unique id (`ncclUniqueId`): made by rank 0 ([`NcclId::new`]), given to
/// every rank (any transport: [`NcclId::exchange`] uses a file, [`NcclId::exchange_tcp`] a TCP
/// connection to rank 0), passed to [`Comm::from_rank`](super::Comm::from_rank).
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct NcclId {
    bytes: [u8; ID_BYTES],
}

impl fmt::Debug for NcclId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "NcclId(")?;
        for b in &self.bytes[..8] {
            write!(f, "{b:02x}")?;
        }
        write!(f, "…)")
    }
}

/// What an id file starts with.
const ID_MAGIC: &[u8; 8] = b"COHNCCL1";

impl NcclId {
    /// A new id (`ncclGetUniqueId`; with the default bootstrap, it names rank 0's host and a
    /// port it listens on).
    ///
    /// # Errors
    /// [`NcclError::NotFound`] without NCCL; an NCCL failure (no network interface).
    pub fn new() -> NcclResult<Self> {
        let api = api()?;
        let mut raw = RawId { internal: [0; ID_BYTES] };
        // SAFETY: `raw` is a live `ncclUniqueId` for NCCL to write.
        let rc = unsafe { (api.get_unique_id)(&mut raw) };
        check(api, rc, std::ptr::null_mut(), || "making a unique id".into())?;
        Ok(Self { bytes: raw.internal.map(|c| c as u8) })
    }

    /// The id's bytes, to send to the other ranks.
    #[must_use]
    pub fn as_bytes(&self) -> &[u8; ID_BYTES] {
        &self.bytes
    }

    /// The id from bytes received from rank 0.
    #[must_use]
    pub fn from_bytes(bytes: [u8; ID_BYTES]) -> Self {
        Self { bytes }
    }

    pub(super) fn raw(&self) -> RawId {
        RawId { internal: self.bytes.map(|b| b as c_char) }
    }

    /// Writes the id to `path` atomically: to a temporary file beside it, then renamed, so
    /// that a reader never sees a partial id.
    ///
    /// # Errors
    /// [`NcclError::IdExchange`] when the file cannot be written.
    pub fn write_file(&self, path: &Path) -> NcclResult<()> {
        let fail = |e: std::io::Error| NcclError::IdExchange(format!("writing {}: {e}", path.display()));
        let mut tmp = path.as_os_str().to_owned();
        tmp.push(format!(".tmp{}", std::process::id()));
        let tmp = std::path::PathBuf::from(tmp);
        let mut data = Vec::with_capacity(ID_MAGIC.len() + ID_BYTES);
        data.extend_from_slice(ID_MAGIC);
        data.extend_from_slice(&self.bytes);
        std::fs::write(&tmp, &data).map_err(fail)?;
        std::fs::rename(&tmp, path).map_err(|e| {
            let _ = std::fs::remove_file(&tmp);
            fail(e)
        })
    }

    /// Reads an id that [`NcclId::write_file`] wrote to `path`, waiting up to `timeout` for
    /// the file to appear.
    ///
    /// # Errors
    /// [`NcclError::IdExchange`] on a timeout, or a file that is not an id.
    pub fn read_file(path: &Path, timeout: Duration) -> NcclResult<Self> {
        let start = Instant::now();
        loop {
            match std::fs::read(path) {
                Ok(data) => {
                    if data.len() != ID_MAGIC.len() + ID_BYTES || &data[..ID_MAGIC.len()] != ID_MAGIC {
                        return Err(NcclError::IdExchange(format!(
                            "{} is not an NCCL id written by Cohort ({} bytes)",
                            path.display(),
                            data.len()
                        )));
                    }
                    let mut bytes = [0u8; ID_BYTES];
                    bytes.copy_from_slice(&data[ID_MAGIC.len()..]);
                    return Ok(Self { bytes });
                }
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                    if start.elapsed() >= timeout {
                        return Err(NcclError::IdExchange(format!(
                            "{} did not appear within {:.1} s: did rank 0 start, and does every rank see the same \
                             path (a shared file system across machines)?",
                            path.display(),
                            timeout.as_secs_f64()
                        )));
                    }
                    std::thread::sleep(Duration::from_millis(10));
                }
                Err(e) => return Err(NcclError::IdExchange(format!("reading {}: {e}", path.display()))),
            }
        }
    }

    /// The id of a job of several processes, exchanged through the file `path`: rank 0 makes
    /// it and writes it; every other rank waits for it (up to `timeout`). The file must not
    /// exist before the job (a stale id would make the ranks wait for a rank 0 that is gone):
    /// use a fresh path per job, on a file system every rank sees.
    ///
    /// # Errors
    /// As [`NcclId::new`], [`NcclId::write_file`], [`NcclId::read_file`].
    pub fn exchange(path: &Path, rank: usize, timeout: Duration) -> NcclResult<Self> {
        if rank == 0 {
            let id = Self::new()?;
            id.write_file(path)?;
            Ok(id)
        } else {
            Self::read_file(path, timeout)
        }
    }
}
