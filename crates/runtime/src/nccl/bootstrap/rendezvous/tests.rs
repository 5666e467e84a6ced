use std::io::Write;
use std::net::{TcpListener, TcpStream};

use super::wire::{Answer, read_answer};
use super::*;
use crate::nccl::ID_BYTES;
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
