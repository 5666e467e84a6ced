//! Rank 0 serving: connections accepted without blocking, hellos read and judged, the ranks
//! that joined watched, and the id sent once every rank is there.

use std::collections::VecDeque;
use std::io::{self, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::time::{Duration, Instant};

use super::wire::{HELLO_FIXED, ID, JOINED, MAGIC, answer, refusal};
use super::{HELLO_WAIT, MAX_PENDING, MAX_TOKEN, PROTOCOL, Rendezvous, SEND_WAIT, canonical, ex, ranges};
use crate::nccl::{NcclId, NcclResult};

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
pub(super) struct Serving<'a> {
    rz: &'a Rendezvous,
    local: SocketAddr,
    /// By rank (0 is rank 0's own, always `None`).
    members: Vec<Option<Member>>,
    pub(super) joined: usize,
    pending: VecDeque<Pending>,
    refused: Vec<String>,
    left: Vec<String>,
    strays: usize,
    accept_error: Option<String>,
}

impl<'a> Serving<'a> {
    /// Rank 0 of `rz`, listening on `local`, before any rank joined.
    pub(super) fn new(rz: &'a Rendezvous, local: SocketAddr) -> Self {
        Serving {
            rz,
            local,
            members: (0..rz.world_size).map(|_| None).collect(),
            joined: 0,
            pending: VecDeque::new(),
            refused: Vec::new(),
            left: Vec::new(),
            strays: 0,
            accept_error: None,
        }
    }

    pub(super) fn accept(&mut self, listener: &TcpListener, probes: &mut Vec<SocketAddr>, now: Instant) -> bool {
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

    pub(super) fn read_hellos(&mut self, now: Instant) -> bool {
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
    pub(super) fn check_members(&mut self) {
        for rank in 1..self.members.len() {
            if self.members[rank].as_ref().is_some_and(|m| !alive(m))
                && let Some(m) = self.members[rank].take()
            {
                self.joined -= 1;
                self.left.push(format!("rank {rank} ({})", m.peer));
            }
        }
    }

    pub(super) fn refuse_members(&mut self, why: &str) {
        for m in self.members.iter_mut().filter_map(Option::take) {
            let mut stream = m.stream;
            let _ = stream.write_all(&refusal(why));
            let _ = stream.shutdown(Shutdown::Write);
        }
    }

    /// Who was missing at the deadline, what was refused, what else connected.
    pub(super) fn missing(&self, timeout: Duration) -> String {
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
    pub(super) fn timeout_message(&self, missing: &str) -> String {
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

    pub(super) fn send_id(self, id: &NcclId) -> NcclResult<()> {
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
