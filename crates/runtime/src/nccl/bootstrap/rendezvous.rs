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

use std::collections::VecDeque;
use std::io::{self, Read, Write};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, Shutdown, SocketAddr, TcpListener, TcpStream, ToSocketAddrs};
use std::time::{Duration, Instant};

use super::launch::{BIND_VAR, Endpoint, Launch, MAX_TOKEN, PORT_VAR};
use crate::nccl::{ID_BYTES, NcclError, NcclId, NcclResult};

/// What every message starts with.
const MAGIC: [u8; 8] = *b"CohortRV";
/// The version of the protocol this Cohort speaks.
pub const PROTOCOL: u16 = 1;
/// A hello up to the token.
const HELLO_FIXED: usize = 8 + 2 + 2 + 4 + 4 + 2;
/// An answer up to its payload.
const ANSWER_FIXED: usize = 8 + 2 + 1;
const JOINED: u8 = 1;
const ID: u8 = 2;
const REFUSED: u8 = 3;
/// The longest refusal read.
const MAX_MESSAGE: usize = 4096;

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

    /// Rank 0's listener, bound to the endpoint's port: on the endpoint's address when it
    /// names a loopback address (`127.0.0.1`, `::1`, `localhost`), else on every address
    /// (`::`, or `0.0.0.0` where the host name has no IPv6 address), unless
    /// [`with_bind`](Rendezvous::with_bind) says. Then, unless the bind address was given
    /// (with a port other than 0), it checks that the endpoint reaches it: a connection
    /// refused at every address of the endpoint means the endpoint's host is not this one.
    ///
    /// # Errors
    /// [`NcclError::IdExchange`]: the host does not resolve; the port is in use; the bind
    /// address is not this host's; the endpoint refuses connections from this host.
    pub fn listen(&self) -> NcclResult<Listener> {
        self.listen_checking(self.bind.is_none())
    }

    fn listen_checking(&self, check_endpoint: bool) -> NcclResult<Listener> {
        self.check(0)?;
        let ep = &self.endpoint;
        let resolved = resolve(&ep.host, ep.port, Instant::now() + RESOLVE_WAIT)
            .map_err(|e| ex(format!("rank 0: the rendezvous host {} does not resolve: {e}", ep.host)))?;
        if resolved.is_empty() {
            return Err(ex(format!("rank 0: the rendezvous host {} has no address", ep.host)));
        }
        let listener = match self.bind {
            Some(ip) => bind(ip, ep)?,
            None => match default_bind(&ep.host, &resolved) {
                // A host without IPv6 can't bind `::`: every IPv4 address then.
                ip @ IpAddr::V6(v6) if v6.is_unspecified() => {
                    bind(ip, ep).or_else(|e| bind(Ipv4Addr::UNSPECIFIED.into(), ep).map_err(|_| e))?
                }
                ip => bind(ip, ep)?,
            },
        };
        let local = listener.local_addr().map_err(|e| ex(format!("rank 0: the listener's address: {e}")))?;
        let probes = if check_endpoint && ep.port != 0 { probe(ep, &resolved, local)? } else { Vec::new() };
        listener.set_nonblocking(true).map_err(|e| ex(format!("rank 0: a non-blocking listener: {e}")))?;
        Ok(Listener { listener, local, rz: self.clone(), probes })
    }

    /// Rank `rank`'s id, fetched from rank 0: connects (retrying until `timeout` while rank 0
    /// can't be reached, as it may start later), says hello, and waits for the id, which
    /// comes once every rank has joined.
    ///
    /// # Errors
    /// [`NcclError::IdExchange`]: rank 0 refused this rank (saying why: another world size or
    /// token, the rank taken, the other ranks missing at rank 0's deadline); what answered is
    /// not a Cohort rank 0; no id within `timeout` (saying what was last tried).
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

    fn hello(&self, rank: usize) -> Vec<u8> {
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

enum Answer {
    Joined,
    Id([u8; ID_BYTES]),
    Refused(String),
}

enum ReadError {
    Closed,
    TimedOut,
    Io(io::Error),
    Foreign(String),
}

/// Fills `buf` from `s` by `deadline`.
fn read_until(s: &mut TcpStream, buf: &mut [u8], deadline: Instant) -> Result<(), ReadError> {
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

fn read_answer(s: &mut TcpStream, deadline: Instant) -> Result<Answer, ReadError> {
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

fn answer(kind: u8, payload: &[u8]) -> Vec<u8> {
    let mut a = Vec::with_capacity(ANSWER_FIXED + payload.len());
    a.extend_from_slice(&MAGIC);
    a.extend_from_slice(&PROTOCOL.to_be_bytes());
    a.push(kind);
    a.extend_from_slice(payload);
    a
}

fn refusal(message: &str) -> Vec<u8> {
    let mut text = message.as_bytes();
    if text.len() > MAX_MESSAGE {
        text = &text[..MAX_MESSAGE];
    }
    let mut payload = (text.len() as u16).to_be_bytes().to_vec();
    payload.extend_from_slice(text);
    answer(REFUSED, &payload)
}

/// The address rank 0 binds by default: the loopback address the host names, else every
/// address (IPv6 and, through it, IPv4 when the host has an IPv6 address).
fn default_bind(host: &str, resolved: &[SocketAddr]) -> IpAddr {
    let loopback = host.eq_ignore_ascii_case("localhost") || host.parse::<IpAddr>().is_ok_and(|a| a.is_loopback());
    if loopback && let Some(a) = resolved.iter().find(|a| a.ip().is_loopback()) {
        return a.ip();
    }
    if resolved.iter().any(SocketAddr::is_ipv6) { Ipv6Addr::UNSPECIFIED.into() } else { Ipv4Addr::UNSPECIFIED.into() }
}

fn bind(ip: IpAddr, ep: &Endpoint) -> NcclResult<TcpListener> {
    TcpListener::bind((ip, ep.port)).map_err(|e| {
        let at = Endpoint::new(ip.to_string(), ep.port);
        ex(match e.kind() {
            io::ErrorKind::AddrInUse => format!(
                "rank 0 cannot listen on {at}: the port is in use (by another job, or a process of this one still \
                 running; under torchrun, torchrun's store holds MASTER_PORT and Cohort takes MASTER_PORT + 1): choose \
                 another MASTER_PORT, or set {PORT_VAR}"
            ),
            io::ErrorKind::AddrNotAvailable => format!(
                "rank 0 cannot listen on {at}: {ip} is not an address of this host ({e}); is this process on the host \
                 {} names? ({BIND_VAR} sets the address)",
                ep.host
            ),
            io::ErrorKind::PermissionDenied => {
                format!("rank 0 cannot listen on {at}: {e} (ports below 1024 need privileges: choose another)")
            }
            _ => format!("rank 0 cannot listen on {at}: {e}"),
        })
    })
}

/// Connects to the endpoint's addresses to see that they reach this listener: if every one
/// refuses, the endpoint's host is not this one. (Timeouts and other errors prove nothing.)
/// Returns the probes' own addresses, so that the listener drops their connections quietly.
fn probe(ep: &Endpoint, resolved: &[SocketAddr], local: SocketAddr) -> NcclResult<Vec<SocketAddr>> {
    let mut probes = Vec::new();
    let mut refused = 0;
    for a in resolved {
        match TcpStream::connect_timeout(a, Duration::from_secs(1)) {
            Ok(s) => {
                if let Ok(mine) = s.local_addr() {
                    probes.push(canonical(mine));
                }
            }
            Err(e) if e.kind() == io::ErrorKind::ConnectionRefused => refused += 1,
            Err(_) => {}
        }
    }
    if refused == resolved.len() {
        let addrs: Vec<String> = resolved.iter().map(ToString::to_string).collect();
        return Err(ex(format!(
            "rank 0 listens on {local}, but {ep} ({}) refuses connections from this host: {} is not rank 0's host. \
             Set MASTER_ADDR to the host of rank 0 (or start rank 0 there); if that address reaches this host only \
             from elsewhere (a NAT, a proxy), set {BIND_VAR} to the address to listen on, which skips this check",
            addrs.join(", "),
            ep.host
        )));
    }
    Ok(probes)
}

/// Rank 0's bound listener ([`Rendezvous::listen`]), ready to serve the id.
#[derive(Debug)]
pub struct Listener {
    listener: TcpListener,
    local: SocketAddr,
    rz: Rendezvous,
    probes: Vec<SocketAddr>,
}

impl Listener {
    /// The address it listens on (its port, where the endpoint's was 0).
    #[must_use]
    pub fn local_addr(&self) -> SocketAddr {
        self.local
    }

    /// Waits until every other rank has joined, then sends each the id; at most `timeout`.
    /// Connections that are not good ranks are dropped or refused without stopping the
    /// others (see the module docs).
    ///
    /// # Errors
    /// [`NcclError::IdExchange`]: not every rank joined within `timeout` (naming those
    /// missing, the refusals and what else connected; the ranks that joined are refused with
    /// the same message); a rank went away before it got the id.
    pub fn serve(self, id: &NcclId, timeout: Duration) -> NcclResult<()> {
        self.serve_until(id, after(Instant::now(), timeout), timeout)
    }

    fn serve_until(mut self, id: &NcclId, deadline: Instant, timeout: Duration) -> NcclResult<()> {
        let world = self.rz.world_size;
        let mut s = Serving {
            rz: &self.rz,
            local: self.local,
            members: (0..world).map(|_| None).collect(),
            joined: 0,
            pending: VecDeque::new(),
            refused: Vec::new(),
            left: Vec::new(),
            strays: 0,
            accept_error: None,
        };
        let mut checked = Instant::now();
        while s.joined < world - 1 {
            let now = Instant::now();
            if now >= deadline {
                let missing = s.missing(timeout);
                s.refuse_members(&format!("not every rank joined: {missing}"));
                return Err(ex(s.timeout_message(&missing)));
            }
            let mut busy = s.accept(&self.listener, &mut self.probes, now);
            busy |= s.read_hellos(now);
            if now.duration_since(checked) >= LIVENESS_EVERY {
                s.check_members();
                checked = now;
            }
            if !busy {
                std::thread::sleep(Duration::from_millis(2));
            }
        }
        // No connection can reach this rendezvous from here on.
        drop(self.listener);
        s.send_id(id)
    }
}

/// A connection that has not sent its whole hello yet.
struct Pending {
    stream: TcpStream,
    peer: SocketAddr,
    buf: Vec<u8>,
    since: Instant,
}

/// A rank that joined.
struct Member {
    stream: TcpStream,
    peer: SocketAddr,
}

/// A hello, read whole.
struct Hello {
    world: u32,
    rank: u32,
    token: Vec<u8>,
}

enum Step {
    Wait,
    /// Not a Cohort rank: closed, silent too long, or not the magic.
    Drop,
    Refuse(String),
    Hello(Hello),
}

/// Rank 0's state while it serves.
struct Serving<'a> {
    rz: &'a Rendezvous,
    local: SocketAddr,
    /// By rank (0 is rank 0's own, always `None`).
    members: Vec<Option<Member>>,
    joined: usize,
    pending: VecDeque<Pending>,
    refused: Vec<String>,
    left: Vec<String>,
    strays: usize,
    accept_error: Option<String>,
}

impl Serving<'_> {
    fn accept(&mut self, listener: &TcpListener, probes: &mut Vec<SocketAddr>, now: Instant) -> bool {
        let mut busy = false;
        // At most MAX_PENDING a round, so that a flood of connections can't keep rank 0 from
        // reading hellos or from its deadline.
        for _ in 0..MAX_PENDING {
            match listener.accept() {
                Ok((stream, peer)) => {
                    busy = true;
                    let peer = canonical(peer);
                    // Rank 0's own probe, once (its port may serve another connection later).
                    if let Some(i) = probes.iter().position(|p| *p == peer) {
                        probes.swap_remove(i);
                        continue;
                    }
                    if stream.set_nonblocking(true).is_err() {
                        continue;
                    }
                    let _ = stream.set_nodelay(true);
                    if self.pending.len() >= MAX_PENDING {
                        self.pending.pop_front();
                        self.strays += 1;
                    }
                    self.pending.push_back(Pending { stream, peer, buf: Vec::new(), since: now });
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    // Out of descriptors (EMFILE), mostly: the connection waits in the backlog.
                    let hint = if e.raw_os_error() == Some(libc::EMFILE) {
                        " (raise the open-file limit, `ulimit -n`, above the number of ranks)"
                    } else {
                        ""
                    };
                    self.accept_error = Some(format!("{e}{hint}"));
                    break;
                }
            }
        }
        busy
    }

    fn read_hellos(&mut self, now: Instant) -> bool {
        let mut busy = false;
        let mut i = 0;
        while i < self.pending.len() {
            let step = step(&mut self.pending[i], now);
            if let Step::Wait = step {
                i += 1;
                continue;
            }
            busy = true;
            let Some(p) = self.pending.remove(i) else { break };
            match step {
                Step::Wait => {}
                Step::Drop => self.strays += 1,
                Step::Refuse(why) => self.refuse(p.stream, &p.peer.to_string(), &why),
                Step::Hello(h) => self.admit(p, h),
            }
        }
        busy
    }

    /// Refuses a connection (`who`: its address, and the rank it claimed), saying why.
    fn refuse(&mut self, mut stream: TcpStream, who: &str, why: &str) {
        // Best effort: a few hundred bytes fit the socket's buffer.
        let _ = stream.write_all(&refusal(why));
        let _ = stream.shutdown(Shutdown::Write);
        if self.refused.len() < 8 {
            self.refused.push(format!("{who}: {why}"));
        } else if self.refused.len() == 8 {
            self.refused.push("and more".into());
        }
    }

    fn admit(&mut self, p: Pending, h: Hello) {
        let world = self.rz.world_size;
        let rank = h.rank as usize;
        let why = if h.world as usize != world {
            format!(
                "it was started with a world size of {}, rank 0 with {world}: every rank must be given the same",
                h.world
            )
        } else if h.token != self.rz.token.as_bytes() {
            format!(
                "its job token {:?} is not rank 0's: a rank of another job? (the launcher's job id, or \
                 COHORT_JOB_ID)",
                String::from_utf8_lossy(&h.token)
            )
        } else if rank == 0 {
            format!("it says it is rank 0, but rank 0 is the process serving at {}", self.local)
        } else if rank >= world {
            format!("rank {rank} is not below the world size {world}")
        } else if let Some(old) = self.members[rank].as_ref().filter(|m| alive(m)) {
            format!("rank {rank} joined already, from {}: two processes were given rank {rank}", old.peer)
        } else {
            let mut stream = p.stream;
            if stream.write_all(&answer(JOINED, &[])).is_err() {
                self.left.push(format!("rank {rank} ({})", p.peer));
                return;
            }
            if self.members[rank].replace(Member { stream, peer: p.peer }).is_none() {
                self.joined += 1;
            }
            return;
        };
        // Rank 0's token goes to its own error only, not to whoever connected.
        let who = if h.token == self.rz.token.as_bytes() {
            format!("{} (rank {rank})", p.peer)
        } else {
            format!("{} (rank {rank}; rank 0's token is {:?})", p.peer, self.rz.token)
        };
        self.refuse(p.stream, &who, &why);
    }

    /// Forgets the ranks whose connection closed (they may join again).
    fn check_members(&mut self) {
        for rank in 1..self.members.len() {
            if self.members[rank].as_ref().is_some_and(|m| !alive(m))
                && let Some(m) = self.members[rank].take()
            {
                self.joined -= 1;
                self.left.push(format!("rank {rank} ({})", m.peer));
            }
        }
    }

    fn refuse_members(&mut self, why: &str) {
        for m in self.members.iter_mut().filter_map(Option::take) {
            let mut stream = m.stream;
            let _ = stream.write_all(&refusal(why));
            let _ = stream.shutdown(Shutdown::Write);
        }
    }

    /// Who was missing at the deadline, what was refused, what else connected.
    fn missing(&self, timeout: Duration) -> String {
        let world = self.rz.world_size;
        let missing: Vec<usize> = (1..world).filter(|&r| self.members[r].is_none()).collect();
        let mut m = format!(
            "{} of the {} other ranks joined within {:.1} s; {} {} never joined",
            world - 1 - missing.len(),
            world - 1,
            timeout.as_secs_f64(),
            if missing.len() == 1 { "rank" } else { "ranks" },
            ranges(&missing)
        );
        if !self.refused.is_empty() {
            m += &format!("; refused: {}", self.refused.join("; "));
        }
        if !self.left.is_empty() {
            m += &format!("; joined, then closed the connection: {}", self.left.join(", "));
        }
        if self.strays > 0 {
            m += &format!("; {} other connection(s) were not Cohort ranks", self.strays);
        }
        if let Some(e) = &self.accept_error {
            m += &format!("; accepting connections failed: {e}");
        }
        m
    }

    /// Rank 0's error at the deadline.
    fn timeout_message(&self, missing: &str) -> String {
        let at = if self.rz.endpoint.port == 0 {
            format!("rank 0 (listening on {})", self.local)
        } else {
            format!("rank 0 at {} (listening on {})", self.rz.endpoint, self.local)
        };
        format!(
            "{at}: {missing}. Did every rank start, with the same world size, and can each reach {} at that port?",
            self.rz.endpoint.host
        )
    }

    fn send_id(self, id: &NcclId) -> NcclResult<()> {
        let frame = answer(ID, id.as_bytes());
        let mut gone = Vec::new();
        for (rank, m) in self.members.into_iter().enumerate() {
            let Some(Member { mut stream, peer }) = m else { continue };
            let sent = stream
                .set_nonblocking(false)
                .and_then(|()| stream.set_write_timeout(Some(SEND_WAIT)))
                .and_then(|()| stream.write_all(&frame));
            let _ = stream.shutdown(Shutdown::Write);
            if let Err(e) = sent {
                gone.push(format!("rank {rank} ({peer}): {e}"));
            }
        }
        if gone.is_empty() {
            Ok(())
        } else {
            Err(ex(format!("rank 0: every rank joined, but the id could not be sent to {}", gone.join(", "))))
        }
    }
}

/// Whether a rank that joined is still connected: it sends nothing after its hello, so a
/// readable socket means it closed (or broke the protocol).
fn alive(m: &Member) -> bool {
    let mut b = [0u8; 1];
    match m.stream.peek(&mut b) {
        Ok(_) => false,
        Err(e) => matches!(e.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted),
    }
}

/// Reads what a pending connection sent, without blocking.
fn step(p: &mut Pending, now: Instant) -> Step {
    loop {
        let need = if p.buf.len() < HELLO_FIXED {
            HELLO_FIXED
        } else {
            let len = usize::from(u16::from_be_bytes([p.buf[20], p.buf[21]]));
            if len > MAX_TOKEN {
                return Step::Refuse(format!("a job token of {len} bytes (at most {MAX_TOKEN})"));
            }
            HELLO_FIXED + len
        };
        if p.buf.len() == need {
            let b = &p.buf;
            return Step::Hello(Hello {
                world: u32::from_be_bytes([b[12], b[13], b[14], b[15]]),
                rank: u32::from_be_bytes([b[16], b[17], b[18], b[19]]),
                token: b[HELLO_FIXED..].to_vec(),
            });
        }
        let mut chunk = [0u8; HELLO_FIXED + MAX_TOKEN];
        match p.stream.read(&mut chunk[..need - p.buf.len()]) {
            Ok(0) => return Step::Drop,
            Ok(n) => {
                p.buf.extend_from_slice(&chunk[..n]);
                let k = p.buf.len().min(MAGIC.len());
                if p.buf[..k] != MAGIC[..k] {
                    return Step::Drop;
                }
                if p.buf.len() >= 10 {
                    let version = u16::from_be_bytes([p.buf[8], p.buf[9]]);
                    if version != PROTOCOL {
                        return Step::Refuse(format!(
                            "it speaks version {version} of Cohort's rendezvous, rank 0 version {PROTOCOL}: run the \
                             same Cohort on every rank"
                        ));
                    }
                }
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                return if now.duration_since(p.since) > HELLO_WAIT { Step::Drop } else { Step::Wait };
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(_) => return Step::Drop,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;
    use std::thread;

    const LOOPBACK: &str = "127.0.0.1";

    fn fake_id(seed: u8) -> NcclId {
        let mut b = [0u8; ID_BYTES];
        for (i, x) in b.iter_mut().enumerate() {
            *x = (i as u8).wrapping_mul(31).wrapping_add(seed);
        }
        NcclId::from_bytes(b)
    }

    /// A port nothing listens on (just freed).
    fn free_port() -> u16 {
        TcpListener::bind((LOOPBACK, 0)).unwrap().local_addr().unwrap().port()
    }

    /// Rank 0 of `world` on an ephemeral loopback port, and the rendezvous the others use.
    fn rank0(world: usize) -> (Listener, Rendezvous) {
        let l = Rendezvous::new(Endpoint::new(LOOPBACK, 0), world).listen().unwrap();
        let port = l.local_addr().port();
        (l, Rendezvous::new(Endpoint::new(LOOPBACK, port), world))
    }

    fn spawn_join(rz: &Rendezvous, rank: usize, timeout: Duration) -> thread::JoinHandle<NcclResult<NcclId>> {
        let rz = rz.clone();
        thread::spawn(move || rz.join(rank, timeout))
    }

    fn message(r: NcclResult<impl std::fmt::Debug>) -> String {
        match r {
            Err(NcclError::IdExchange(m)) => m,
            other => panic!("not an id exchange error: {other:?}"),
        }
    }

    #[test]
    fn four_ranks_get_rank_0s_id() {
        let (l, rz) = rank0(4);
        let id = fake_id(7);
        // A timeout past what an Instant holds waits as long as it takes, without overflowing.
        let peers: Vec<_> = (1..4).map(|r| spawn_join(&rz, r, Duration::MAX)).collect();
        l.serve(&id, Duration::MAX).unwrap();
        for p in peers {
            assert_eq!(p.join().unwrap().unwrap(), id);
        }
    }

    #[test]
    fn exchange_on_a_fixed_port_when_rank_0_starts_last() {
        let port = free_port();
        let rz = Rendezvous::new(Endpoint::new(LOOPBACK, port), 3).with_token("job-1");
        let peers: Vec<_> = (1..3).map(|r| spawn_join(&rz, r, Duration::from_secs(20))).collect();
        thread::sleep(Duration::from_millis(300)); // the others retry meanwhile
        let id = rz.exchange(0, Duration::from_secs(20), || Ok(fake_id(1))).unwrap();
        assert_eq!(id, fake_id(1));
        for p in peers {
            assert_eq!(p.join().unwrap().unwrap(), id);
        }
        // One rank needs no network.
        let alone = Rendezvous::new(Endpoint::new("no-such-host.invalid", 1), 1);
        assert_eq!(alone.exchange(0, Duration::ZERO, || Ok(fake_id(2))).unwrap(), fake_id(2));
    }

    #[test]
    fn ipv6_loopback_and_host_names_resolve() {
        for host in ["::1", "localhost"] {
            let Ok(l) = Rendezvous::new(Endpoint::new(host, 0), 2).listen() else {
                eprintln!("no {host} here: skipped");
                continue;
            };
            let rz = Rendezvous::new(Endpoint::new(host, l.local_addr().port()), 2);
            let peer = spawn_join(&rz, 1, Duration::from_secs(20));
            l.serve(&fake_id(3), Duration::from_secs(20)).unwrap();
            assert_eq!(peer.join().unwrap().unwrap(), fake_id(3), "{host}");
        }
    }

    #[test]
    fn a_wrong_world_size_or_token_is_refused_and_the_others_go_on() {
        let (l, rz) = rank0(3);
        let (tx, rx) = mpsc::channel();
        let id = fake_id(9);
        thread::spawn(move || tx.send(l.serve(&id, Duration::from_secs(20))).unwrap());
        let bigger = Rendezvous::new(rz.endpoint().clone(), 4);
        let bad_size = spawn_join(&bigger, 1, Duration::from_secs(20));
        let other_job = spawn_join(&rz.clone().with_token("another job"), 2, Duration::from_secs(20));
        let m = message(bad_size.join().unwrap());
        assert!(m.contains("refused it: it was started with a world size of 4, rank 0 with 3"), "{m}");
        let m = message(other_job.join().unwrap());
        assert!(m.contains("job token \"another job\" is not rank 0's: a rank of another job?"), "{m}");
        // The rendezvous goes on for the good ranks.
        let good: Vec<_> = (1..3).map(|r| spawn_join(&rz, r, Duration::from_secs(20))).collect();
        rx.recv().unwrap().unwrap();
        for g in good {
            assert_eq!(g.join().unwrap().unwrap(), id);
        }
    }

    #[test]
    fn a_rank_given_twice_is_refused_once() {
        let (l, rz) = rank0(3);
        let (tx, rx) = mpsc::channel();
        thread::spawn(move || tx.send(l.serve(&fake_id(4), Duration::from_secs(20))).unwrap());
        let twins: Vec<_> = (0..2).map(|_| spawn_join(&rz, 1, Duration::from_secs(20))).collect();
        // The second twin to say hello is refused at once; then rank 2 completes the job.
        let t = Instant::now();
        while !twins.iter().any(thread::JoinHandle::is_finished) && t.elapsed() < Duration::from_secs(20) {
            thread::sleep(Duration::from_millis(5));
        }
        let other = spawn_join(&rz, 2, Duration::from_secs(20));
        rx.recv().unwrap().unwrap();
        assert_eq!(other.join().unwrap().unwrap(), fake_id(4));
        let results: Vec<_> = twins.into_iter().map(|t| t.join().unwrap()).collect();
        assert_eq!(results.iter().filter(|r| r.as_ref().is_ok_and(|id| *id == fake_id(4))).count(), 1);
        let m = results.into_iter().find_map(Result::err).expect("one twin refused").to_string();
        assert!(m.contains("rank 1 joined already") && m.contains("two processes were given rank 1"), "{m}");
    }

    #[test]
    fn a_rank_claiming_rank_0_or_out_of_range_is_refused() {
        let (l, rz) = rank0(2);
        let mut raw = TcpStream::connect(l.local_addr()).unwrap();
        raw.write_all(&rz.hello(0)).unwrap();
        let mut out_of_range = TcpStream::connect(l.local_addr()).unwrap();
        let mut h = rz.hello(1);
        h[16..20].copy_from_slice(&7u32.to_be_bytes());
        out_of_range.write_all(&h).unwrap();
        let good = spawn_join(&rz, 1, Duration::from_secs(20));
        l.serve(&fake_id(5), Duration::from_secs(20)).unwrap();
        assert_eq!(good.join().unwrap().unwrap(), fake_id(5));
        let deadline = Instant::now() + Duration::from_secs(5);
        let Ok(Answer::Refused(m)) = read_answer(&mut raw, deadline) else { panic!("rank 0 twice not refused") };
        assert!(m.starts_with("it says it is rank 0, but rank 0 is the process serving at 127.0.0.1:"), "{m}");
        let Ok(Answer::Refused(m)) = read_answer(&mut out_of_range, deadline) else { panic!("rank 7 not refused") };
        assert_eq!(m, "rank 7 is not below the world size 2");
    }

    /// Connections that are not ranks — garbage, silence, half a hello, a flood past
    /// MAX_PENDING, another protocol version — neither stop nor slow the good ranks.
    #[test]
    fn stray_connections_do_not_stop_the_others() {
        let (l, rz) = rank0(4);
        let addr = l.local_addr();
        let (tx, rx) = mpsc::channel();
        thread::spawn(move || tx.send(l.serve(&fake_id(6), Duration::from_secs(30))).unwrap());
        let t = Instant::now();
        let mut strays = Vec::new();
        let mut curl = TcpStream::connect(addr).unwrap();
        curl.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
        strays.push(curl);
        for _ in 0..MAX_PENDING + 20 {
            strays.push(TcpStream::connect(addr).unwrap()); // silent, held open
        }
        let mut half = TcpStream::connect(addr).unwrap();
        half.write_all(&rz.hello(1)[..12]).unwrap();
        strays.push(half);
        let mut v2 = TcpStream::connect(addr).unwrap();
        let mut h = rz.hello(2);
        h[8..10].copy_from_slice(&2u16.to_be_bytes());
        v2.write_all(&h).unwrap();
        // A rank that joins, then goes away: forgotten, so its rank can join again.
        let mut quitter = TcpStream::connect(addr).unwrap();
        quitter.write_all(&rz.hello(3)).unwrap();
        let deadline = Instant::now() + Duration::from_secs(10);
        assert!(matches!(read_answer(&mut quitter, deadline), Ok(Answer::Joined)));
        drop(quitter);
        thread::sleep(Duration::from_millis(200));
        let good: Vec<_> = (1..4).map(|r| spawn_join(&rz, r, Duration::from_secs(30))).collect();
        rx.recv().unwrap().unwrap();
        for g in good {
            assert_eq!(g.join().unwrap().unwrap(), fake_id(6));
        }
        assert!(t.elapsed() < HELLO_WAIT, "the good ranks waited for the strays: {:?}", t.elapsed());
        let Ok(Answer::Refused(m)) = read_answer(&mut v2, deadline) else { panic!("version 2 not refused") };
        assert!(m.contains("version 2 of Cohort's rendezvous"), "{m}");
        drop(strays);
    }

    /// A flood of connections neither keeps the good ranks out nor holds rank 0 past its
    /// deadline. (Each flooding thread stops after 1000 connections, so that the flood does not
    /// use up the loopback's ports for the tests beside it.)
    #[test]
    fn a_connection_flood_does_not_hold_rank_0() {
        use std::sync::Arc;
        use std::sync::atomic::{AtomicBool, Ordering};
        let flood = |addr: SocketAddr, stop: &Arc<AtomicBool>| -> Vec<thread::JoinHandle<()>> {
            (0..4)
                .map(|_| {
                    let stop = stop.clone();
                    thread::spawn(move || {
                        for _ in 0..1000 {
                            if stop.load(Ordering::Relaxed) {
                                break;
                            }
                            let _ = TcpStream::connect(addr);
                        }
                    })
                })
                .collect()
        };
        let stop = Arc::new(AtomicBool::new(false));
        let (l, rz) = rank0(2);
        let mut floods = flood(l.local_addr(), &stop);
        let t = Instant::now();
        let good = spawn_join(&rz, 1, Duration::from_secs(30));
        let served = l.serve(&fake_id(8), Duration::from_secs(30));
        let took = t.elapsed();
        served.unwrap();
        assert_eq!(good.join().unwrap().unwrap(), fake_id(8));
        assert!(took < Duration::from_secs(10), "rank 0 took {took:?} under the flood");
        // With a rank missing, the deadline holds.
        let (l, _) = rank0(2);
        floods.extend(flood(l.local_addr(), &stop));
        let t = Instant::now();
        let m = message(l.serve(&fake_id(8), Duration::from_millis(500)));
        let took = t.elapsed();
        stop.store(true, Ordering::Relaxed);
        assert!(took < Duration::from_secs(5), "rank 0 took {took:?} past a 0.5 s deadline");
        assert!(m.contains("rank 1 never joined"), "{m}");
        for f in floods {
            f.join().unwrap();
        }
    }

    #[test]
    fn missing_ranks_are_named_at_rank_0s_deadline_and_told_to_those_waiting() {
        let (l, rz) = rank0(6);
        let waiting = spawn_join(&rz, 1, Duration::from_secs(30));
        let fourth = spawn_join(&rz, 4, Duration::from_secs(30));
        let bad = spawn_join(&Rendezvous::new(rz.endpoint().clone(), 7), 2, Duration::from_secs(30));
        let stranger = spawn_join(&rz.clone().with_token("job-x"), 3, Duration::from_secs(30));
        let mut curl = TcpStream::connect(l.local_addr()).unwrap();
        curl.write_all(b"GET /").unwrap();
        let t = Instant::now();
        thread::sleep(Duration::from_millis(100));
        let m = message(l.serve(&fake_id(0), Duration::from_millis(1500)));
        assert!(t.elapsed() < Duration::from_secs(5));
        assert!(m.starts_with("rank 0 (listening on 127.0.0.1:"), "{m}");
        assert!(m.contains("): 2 of the 5 other ranks joined within 1.5 s; ranks 2–3, 5 never joined"), "{m}");
        assert!(m.contains("1 other connection(s) were not Cohort ranks"), "{m}");
        assert!(m.contains(" (rank 2): it was started with a world size of 7, rank 0 with 6"), "{m}");
        assert!(message(bad.join().unwrap()).contains("world size of 7"));
        // Rank 0's token is in its own error, not in what the stranger is told.
        assert!(m.contains(" (rank 3; rank 0's token is \"\"): its job token \"job-x\" is not rank 0's"), "{m}");
        let told = message(stranger.join().unwrap());
        assert!(told.contains("is not rank 0's: a rank of another job?") && !told.contains("token is"), "{told}");
        for w in [waiting, fourth] {
            let m = message(w.join().unwrap());
            assert!(m.contains("refused it: not every rank joined: 2 of the 5 other ranks joined"), "{m}");
        }
    }

    #[test]
    fn rank_0_absent_is_an_error_within_the_deadline() {
        let rz = Rendezvous::new(Endpoint::new(LOOPBACK, free_port()), 2);
        let t = Instant::now();
        let m = message(rz.join(1, Duration::from_millis(400)));
        let took = t.elapsed();
        assert!(took >= Duration::from_millis(400) && took < Duration::from_secs(3), "{took:?}");
        assert!(m.starts_with("rank 1 of 2: no NCCL id from rank 0 at 127.0.0.1:"), "{m}");
        assert!(m.contains("within 0.4 s (last: connecting to 127.0.0.1:") && m.contains("refused"), "{m}");
        // A host that does not resolve is retried, then named.
        let rz = Rendezvous::new(Endpoint::new("no-such-host.invalid", 29500), 2);
        let m = message(rz.join(1, Duration::from_millis(200)));
        assert!(m.contains("resolving no-such-host.invalid"), "{m}");
    }

    #[test]
    fn a_port_in_use_is_a_clear_error() {
        let taken = TcpListener::bind((LOOPBACK, 0)).unwrap();
        let port = taken.local_addr().unwrap().port();
        let rz = Rendezvous::new(Endpoint::new(LOOPBACK, port), 2);
        let m = message(rz.listen());
        assert!(m.starts_with(&format!("rank 0 cannot listen on 127.0.0.1:{port}: the port is in use")), "{m}");
        assert!(m.contains(PORT_VAR), "{m}");
        let m = message(rz.exchange(0, Duration::from_secs(1), || panic!("no id is made when the port is taken")));
        assert!(m.contains("in use"), "{m}");
    }

    #[test]
    fn rank_0_on_another_host_than_the_endpoint_is_an_error() {
        // The endpoint names 127.0.0.1; rank 0 is bound elsewhere (127.0.0.2): nothing answers
        // at the endpoint, so it is not this host.
        let rz = Rendezvous::new(Endpoint::new(LOOPBACK, free_port()), 2).with_bind("127.0.0.2".parse().unwrap());
        let m = message(rz.listen_checking(true));
        assert!(m.contains("refuses connections from this host: 127.0.0.1 is not rank 0's host"), "{m}");
        assert!(m.contains(BIND_VAR), "{m}");
        // A bind address given is trusted: no check.
        assert!(rz.listen().is_ok());
        let m = message(Rendezvous::new(Endpoint::new("no-such-host.invalid", 1), 2).listen());
        assert!(m.starts_with("rank 0: the rendezvous host no-such-host.invalid does not resolve"), "{m}");
    }

    #[test]
    fn something_else_on_the_port_is_named() {
        let server = TcpListener::bind((LOOPBACK, 0)).unwrap();
        let port = server.local_addr().unwrap().port();
        thread::spawn(move || {
            let (mut s, _) = server.accept().unwrap();
            let _ = s.write_all(b"HTTP/1.1 400 Bad Request\r\n\r\n");
            thread::sleep(Duration::from_secs(1));
        });
        let m = message(Rendezvous::new(Endpoint::new(LOOPBACK, port), 2).join(1, Duration::from_secs(20)));
        assert!(m.contains("is not a Cohort rank 0 (it sent \"HTTP/1.1 40\")"), "{m}");
    }

    #[test]
    fn arguments_are_checked() {
        let rz = Rendezvous::new(Endpoint::new(LOOPBACK, 1), 2);
        assert!(message(rz.join(0, Duration::ZERO)).contains("rank 0 serves the id"));
        assert!(message(rz.join(2, Duration::ZERO)).contains("rank 2 of 2"));
        assert!(message(Rendezvous::new(Endpoint::new(LOOPBACK, 1), 0).join(1, Duration::ZERO)).contains("0 ranks"));
        let long = rz.with_token("t".repeat(MAX_TOKEN + 1));
        assert!(message(long.join(1, Duration::ZERO)).contains("256 bytes"));
        assert_eq!(ranges(&[1, 2, 3, 5, 7, 8]), "1–3, 5, 7–8");
    }
}
