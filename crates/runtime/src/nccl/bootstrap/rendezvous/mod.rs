//! The NCCL id over TCP: rank 0 listens, every other rank connects and says who it is, and
//! once every rank has joined, rank 0 sends each the id (the parent module's docs describe the
//! guarantees and the threat model).
//!
//! The protocol (integers big-endian):
//!
//! - a rank's hello: `CohortRV`, the protocol version (`u16`, [`PROTOCOL`]), flags (`u16`, 0),
//!   the world size (`u32`), its rank (`u32`), the job token's length (`u16`, at most
//!   [`MAX_TOKEN`]) and the token;
//! - rank 0's answers, each `CohortRV`, the version (`u16`) and a kind (`u8`): *joined* (no
//!   more), *id* (the 128 bytes), or *refused* (a `u16` length and UTF-8 text, read whatever
//!   the version, so that a rank of another version learns why).
//!
//! Rank 0 serves every connection from one thread, without blocking on any: it accepts what
//! arrives, reads what each sent, and drops a connection that does not start with the magic,
//! closes, or has not sent a whole hello within [`HELLO_WAIT`]; at most [`MAX_PENDING`] wait
//! for a hello at once (the oldest goes). A hello that disagrees with rank 0 (world size,
//! token, a rank out of range or taken) is refused with the reason; the rendezvous goes on for
//! the others. A rank that joined and then closes its connection is forgotten (so it may
//! join again). Each other rank retries, until its deadline, while rank 0 can't be reached or
//! closes the connection before answering, and gives up at once when refused or answered by
//! something that is not a Cohort rank 0.

//!
//! `join.rs` is a rank's side, `listen.rs` and `serve.rs` rank 0's, `wire.rs` the messages.

use std::io;
use std::net::{IpAddr, SocketAddr, ToSocketAddrs};
use std::time::{Duration, Instant};

use super::launch::{BIND_VAR, Endpoint, Launch, MAX_TOKEN, PORT_VAR};
use crate::nccl::{NcclError, NcclId, NcclResult};

mod join;
mod listen;
mod serve;
#[cfg(test)]
mod tests;
mod wire;

pub use listen::Listener;

/// The version of the protocol this Cohort speaks.
pub const PROTOCOL: u16 = 1;
/// How long rank 0 gives a connection to send its whole hello.
pub const HELLO_WAIT: Duration = Duration::from_secs(5);
/// How many connections rank 0 keeps waiting for a hello at once.
pub const MAX_PENDING: usize = 128;
/// The longest a rank waits for one connection attempt.
const CONNECT_WAIT: Duration = Duration::from_secs(5);
/// How often rank 0 looks whether the ranks that joined are still connected.
const LIVENESS_EVERY: Duration = Duration::from_millis(50);
/// How long rank 0 waits for the resolver.
const RESOLVE_WAIT: Duration = Duration::from_secs(30);
/// Rank 0's write of the id to a rank that joined.
const SEND_WAIT: Duration = Duration::from_secs(5);

fn ex(m: String) -> NcclError {
    NcclError::IdExchange(m)
}

/// `timeout` after `from`; a timeout past what an `Instant` can hold (`Duration::MAX`) is a
/// century.
fn after(from: Instant, timeout: Duration) -> Instant {
    from.checked_add(timeout).or_else(|| from.checked_add(Duration::from_secs(100 * 365 * 86_400))).unwrap_or(from)
}

fn remaining(deadline: Instant) -> Duration {
    deadline.saturating_duration_since(Instant::now()).max(Duration::from_millis(1))
}

/// "3", "1, 4–6, 9": ranks, runs shortened.
fn ranges(ranks: &[usize]) -> String {
    let mut out: Vec<String> = Vec::new();
    let mut i = 0;
    while i < ranks.len() {
        let mut j = i;
        while j + 1 < ranks.len() && ranks[j + 1] == ranks[j] + 1 {
            j += 1;
        }
        out.push(if j > i { format!("{}–{}", ranks[i], ranks[j]) } else { ranks[i].to_string() });
        i = j + 1;
    }
    out.join(", ")
}

/// The addresses of `host`: an IP address at once; a name through the system's resolver on a
/// thread of its own, waited for until `deadline` (`getaddrinfo` has no timeout; a resolver
/// that hangs leaves that thread behind until it returns).
fn resolve(host: &str, port: u16, deadline: Instant) -> io::Result<Vec<SocketAddr>> {
    if let Ok(ip) = host.parse::<IpAddr>() {
        return Ok(vec![SocketAddr::new(ip, port)]);
    }
    let (tx, rx) = std::sync::mpsc::channel();
    let name = host.to_owned();
    std::thread::Builder::new().name("cohort-resolve".into()).spawn(move || {
        let _ = tx.send((name.as_str(), port).to_socket_addrs().map(Iterator::collect::<Vec<_>>));
    })?;
    rx.recv_timeout(deadline.saturating_duration_since(Instant::now()))
        .unwrap_or_else(|_| Err(io::Error::new(io::ErrorKind::TimedOut, "the resolver did not answer in time")))
}

/// An IPv4-mapped IPv6 address as the IPv4 one (a dual-stack listener sees IPv4 peers so).
fn canonical(a: SocketAddr) -> SocketAddr {
    match a {
        SocketAddr::V6(v6) => match v6.ip().to_ipv4_mapped() {
            Some(v4) => SocketAddr::new(v4.into(), v6.port()),
            None => a,
        },
        v4 => v4,
    }
}

/// The NCCL id's exchange between the ranks of a job, over TCP at rank 0's [`Endpoint`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rendezvous {
    endpoint: Endpoint,
    world_size: usize,
    token: String,
    bind: Option<IpAddr>,
}

impl Rendezvous {
    /// The rendezvous of `world_size` ranks at `endpoint` (rank 0's host and the port it
    /// listens on), with no job token and the default bind address.
    #[must_use]
    pub fn new(endpoint: Endpoint, world_size: usize) -> Self {
        Self { endpoint, world_size, token: String::new(), bind: None }
    }

    /// The rendezvous a launch describes: its endpoint, world size, token and bind address.
    ///
    /// # Errors
    /// [`NcclError::Launch`] for a job of several ranks without an endpoint.
    pub fn from_launch(launch: &Launch) -> NcclResult<Self> {
        let endpoint = match &launch.rendezvous {
            Some(ep) => ep.clone(),
            None if launch.world_size == 1 => Endpoint::new("127.0.0.1", 0),
            None => {
                return Err(NcclError::Launch(format!(
                    "{} ranks need a rendezvous address (MASTER_ADDR, MASTER_PORT)",
                    launch.world_size
                )));
            }
        };
        let mut rz = Self::new(endpoint, launch.world_size).with_token(launch.token.clone());
        rz.bind = launch.bind;
        Ok(rz)
    }

    /// Every rank must give the same token (at most [`MAX_TOKEN`] bytes), or rank 0 refuses
    /// it: a job id, so that ranks of two jobs that meet at one port don't mix.
    #[must_use]
    pub fn with_token(mut self, token: impl Into<String>) -> Self {
        self.token = token.into();
        self
    }

    /// The address rank 0 listens on (by default the loopback address the endpoint names,
    /// else every address of the host: see the module docs).
    #[must_use]
    pub fn with_bind(mut self, addr: IpAddr) -> Self {
        self.bind = Some(addr);
        self
    }

    /// Where rank 0 listens.
    #[must_use]
    pub fn endpoint(&self) -> &Endpoint {
        &self.endpoint
    }

    /// The number of ranks.
    #[must_use]
    pub fn world_size(&self) -> usize {
        self.world_size
    }

    fn check(&self, rank: usize) -> NcclResult<()> {
        if self.world_size == 0 || u32::try_from(self.world_size).is_err() {
            return Err(ex(format!("a job of {} ranks", self.world_size)));
        }
        if rank >= self.world_size {
            return Err(ex(format!("rank {rank} of {}", self.world_size)));
        }
        if self.token.len() > MAX_TOKEN {
            return Err(ex(format!("a job token of {} bytes (at most {MAX_TOKEN})", self.token.len())));
        }
        Ok(())
    }

    /// The id of the job, for rank `rank`: rank 0 listens ([`Rendezvous::listen`]), makes the
    /// id with `make_id` and serves it to the others ([`Listener::serve`]); every other rank
    /// fetches it ([`Rendezvous::join`]). A job of one rank just makes it. `timeout` bounds the
    /// whole exchange, from this call, on each rank.
    ///
    /// # Errors
    /// As [`Rendezvous::listen`], `make_id`, [`Listener::serve`] and [`Rendezvous::join`].
    pub fn exchange(
        &self,
        rank: usize,
        timeout: Duration,
        make_id: impl FnOnce() -> NcclResult<NcclId>,
    ) -> NcclResult<NcclId> {
        self.check(rank)?;
        if self.world_size == 1 {
            return make_id();
        }
        if rank == 0 {
            let start = Instant::now();
            let listener = self.listen()?;
            let id = make_id()?;
            listener.serve_until(&id, after(start, timeout), timeout)?;
            Ok(id)
        } else {
            self.join(rank, timeout)
        }
    }
}
