//! A rank's side: connect to rank 0 (retrying while it can't be reached), say hello, wait
//! for the id.

use std::io::Write;
use std::net::TcpStream;
use std::time::{Duration, Instant};

use super::wire::{Answer, ReadError, read_answer};
use super::{CONNECT_WAIT, PORT_VAR, Rendezvous, after, ex, remaining, resolve};
use crate::nccl::{NcclId, NcclResult};

impl Rendezvous {
    /// Rank `rank`'s id, fetched from rank 0: connects (retrying until `timeout` while rank 0
    /// can't be reached, as it may start later), says hello, and waits for the id, which
    /// comes once every rank has joined.
    ///
    /// # Errors
    /// [`NcclError::IdExchange`](crate::nccl::NcclError::IdExchange): rank 0 refused this rank
    /// (saying why: another world size or token, the rank taken, the other ranks missing at
    /// rank 0's deadline); what answered is not a Cohort rank 0; no id within `timeout` (saying
    /// what was last tried).
    pub fn join(&self, rank: usize, timeout: Duration) -> NcclResult<NcclId> {
        self.check(rank)?;
        if rank == 0 {
            return Err(ex("rank 0 serves the id (Rendezvous::listen); it does not join".into()));
        }
        let deadline = after(Instant::now(), timeout);
        let hello = self.hello(rank);
        let who = format!("rank {rank} of {}", self.world_size);
        let mut backoff = Duration::from_millis(20);
        let mut accepted = false;
        let last = loop {
            match self.attempt(&hello, deadline) {
                Ok(id) => return Ok(id),
                Err(Attempt::Refused(m)) => {
                    return Err(ex(format!("{who}: rank 0 at {} refused it: {m}", self.endpoint)));
                }
                Err(Attempt::Foreign(m)) => return Err(ex(format!("{who}: {}: {m}", self.endpoint))),
                Err(Attempt::Retry { why, joined }) => {
                    accepted |= joined;
                    let now = Instant::now();
                    if now >= deadline {
                        break why;
                    }
                    std::thread::sleep(backoff.min(deadline - now));
                    backoff = (backoff * 2).min(Duration::from_secs(1));
                }
            }
        };
        let secs = timeout.as_secs_f64();
        Err(ex(if accepted {
            format!(
                "{who}: rank 0 at {} accepted it, but the NCCL id did not come within {secs:.1} s ({last}): not every \
                 rank joined (rank 0's error names those missing)",
                self.endpoint
            )
        } else {
            format!(
                "{who}: no NCCL id from rank 0 at {} within {secs:.1} s (last: {last}): did rank 0 start, and does {} \
                 name its host, reachable from here? (Under torchrun, Cohort's rank 0 listens on MASTER_PORT + 1; \
                 {PORT_VAR} sets the port.)",
                self.endpoint, self.endpoint.host
            )
        }))
    }

    /// One connection: hello, then answers until the id, a refusal, or the end.
    fn attempt(&self, hello: &[u8], deadline: Instant) -> Result<NcclId, Attempt> {
        let ep = &self.endpoint;
        let retry = |why: String, joined: bool| Attempt::Retry { why, joined };
        let addrs =
            resolve(&ep.host, ep.port, deadline).map_err(|e| retry(format!("resolving {}: {e}", ep.host), false))?;
        let mut why = format!("{} has no address", ep.host);
        let mut stream = None;
        for a in &addrs {
            match TcpStream::connect_timeout(a, remaining(deadline).min(CONNECT_WAIT)) {
                Ok(s) => {
                    stream = Some(s);
                    break;
                }
                Err(e) => why = format!("connecting to {a}: {e}"),
            }
        }
        let mut s = stream.ok_or_else(|| retry(why, false))?;
        let _ = s.set_nodelay(true);
        s.set_write_timeout(Some(remaining(deadline)))
            .and_then(|()| s.write_all(hello))
            .map_err(|e| retry(format!("sending the hello: {e}"), false))?;
        let mut joined = false;
        loop {
            match read_answer(&mut s, deadline) {
                Ok(Answer::Joined) => joined = true,
                Ok(Answer::Id(bytes)) => return Ok(NcclId::from_bytes(bytes)),
                Ok(Answer::Refused(m)) => return Err(Attempt::Refused(m)),
                Err(ReadError::Closed) => {
                    let why = if joined {
                        "rank 0 accepted this rank, then closed the connection"
                    } else {
                        "rank 0 closed the connection before answering"
                    };
                    return Err(retry(why.into(), joined));
                }
                Err(ReadError::TimedOut) => {
                    let why =
                        if joined { "waiting for the other ranks" } else { "connected, but rank 0 did not answer" };
                    return Err(retry(why.into(), joined));
                }
                Err(ReadError::Io(e)) => return Err(retry(format!("reading rank 0's answer: {e}"), joined)),
                Err(ReadError::Foreign(m)) => return Err(Attempt::Foreign(m)),
            }
        }
    }
}

/// How one connection attempt of a rank ended, when it brought no id.
enum Attempt {
    /// Rank 0 refused this rank: no use trying again.
    Refused(String),
    /// Something that is not a Cohort rank 0 answered.
    Foreign(String),
    /// Rank 0 could not be reached, or closed the connection: try again until the deadline.
    Retry { why: String, joined: bool },
}
