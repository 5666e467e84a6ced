//! Rank 0's listener: the address it binds, the check that the endpoint reaches it, and the
//! loop that serves until every rank joined.

use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, TcpListener, TcpStream};
use std::time::{Duration, Instant};

use super::serve::Serving;
use super::{BIND_VAR, Endpoint, LIVENESS_EVERY, PORT_VAR, RESOLVE_WAIT, Rendezvous, after, canonical, ex, resolve};
use crate::nccl::{NcclId, NcclResult};

impl Rendezvous {
    /// Rank 0's listener, bound to the endpoint's port: on the endpoint's address when it
    /// names a loopback address (`127.0.0.1`, `::1`, `localhost`), else on every address
    /// (`::`, or `0.0.0.0` where the host name has no IPv6 address), unless
    /// [`with_bind`](Rendezvous::with_bind) says. Then, unless the bind address was given
    /// (with a port other than 0), it checks that the endpoint reaches it: a connection
    /// refused at every address of the endpoint means the endpoint's host is not this one.
    ///
    /// # Errors
    /// [`NcclError::IdExchange`](crate::nccl::NcclError::IdExchange): the host does not
    /// resolve; the port is in use; the bind address is not this host's; the endpoint refuses
    /// connections from this host.
    pub fn listen(&self) -> NcclResult<Listener> {
        self.listen_checking(self.bind.is_none())
    }

    pub(super) fn listen_checking(&self, check_endpoint: bool) -> NcclResult<Listener> {
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
    /// [`NcclError::IdExchange`](crate::nccl::NcclError::IdExchange): not every rank joined
    /// within `timeout` (naming those missing, the refusals and what else connected; the ranks
    /// that joined are refused with the same message); a rank went away before it got the id.
    pub fn serve(self, id: &NcclId, timeout: Duration) -> NcclResult<()> {
        self.serve_until(id, after(Instant::now(), timeout), timeout)
    }

    pub(super) fn serve_until(mut self, id: &NcclId, deadline: Instant, timeout: Duration) -> NcclResult<()> {
        let world = self.rz.world_size;
        let mut s = Serving::new(&self.rz, self.local);
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
