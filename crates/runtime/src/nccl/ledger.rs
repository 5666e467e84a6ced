//! The calls the ranks of one communicator that live in this process have made, compared
//! across those ranks before NCCL sees them (see the parent module's docs).
//!
//! Every collective of a rank is numbered in the order the rank makes them; the `k`-th
//! collective of every local rank must be the same call (kind, element type, count, operator,
//! root). Every send from rank `r` to rank `p` is numbered per pair, and so is every receive of
//! `p` from `r`: the `i`-th send and the `i`-th receive must agree on the element type and
//! count. Ranks of other processes are not seen here.
//!
//! A call is compared with the first call posted under its number; it is *open* until every
//! local rank it concerns has posted, then forgotten. Posting is all-or-nothing per batch (one
//! [`Group`](super::Group)): a batch that disagrees with itself or with an open call changes
//! nothing. No one waits here: the first rank to post a number goes on to NCCL, the others are
//! compared with it as they come.

use std::collections::{BTreeSet, HashMap};
use std::fmt;

use super::ReduceOp;

/// The kind of a call and its rank arguments.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum CallKind {
    AllReduce(ReduceOp),
    Broadcast {
        root: usize,
    },
    AllGather,
    ReduceScatter(ReduceOp),
    /// To this peer.
    Send(usize),
    /// From this peer.
    Recv(usize),
}

/// One rank's call, as compared.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct Call {
    pub kind: CallKind,
    /// `ncclDataType_t`.
    pub dtype: i32,
    /// NCCL's count (per rank for all-gather's send and reduce-scatter's receive).
    pub count: usize,
}

/// The name of an `ncclDataType_t`.
pub(crate) fn dtype_name(d: i32) -> &'static str {
    match d {
        0 => "i8",
        1 => "u8",
        2 => "i32",
        3 => "u32",
        4 => "i64",
        5 => "u64",
        6 => "f16",
        7 => "f32",
        8 => "f64",
        9 => "bf16",
        _ => "?",
    }
}

impl fmt::Display for Call {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (t, n) = (dtype_name(self.dtype), self.count);
        match self.kind {
            CallKind::AllReduce(op) => write!(f, "all_reduce of {n} {t} ({op:?})"),
            CallKind::Broadcast { root } => write!(f, "broadcast of {n} {t} from rank {root}"),
            CallKind::AllGather => write!(f, "all_gather of {n} {t} per rank"),
            CallKind::ReduceScatter(op) => write!(f, "reduce_scatter of {n} {t} per rank ({op:?})"),
            CallKind::Send(p) => write!(f, "send of {n} {t} to rank {p}"),
            CallKind::Recv(p) => write!(f, "recv of {n} {t} from rank {p}"),
        }
    }
}

impl Call {
    fn is_collective(&self) -> bool {
        !matches!(self.kind, CallKind::Send(_) | CallKind::Recv(_))
    }

    /// The fields in which `other` differs from `self`, named.
    fn differences(&self, other: &Call) -> Vec<&'static str> {
        let mut d = Vec::new();
        let name = |k: &CallKind| match k {
            CallKind::AllReduce(_) => "all_reduce",
            CallKind::Broadcast { .. } => "broadcast",
            CallKind::AllGather => "all_gather",
            CallKind::ReduceScatter(_) => "reduce_scatter",
            CallKind::Send(_) => "send",
            CallKind::Recv(_) => "recv",
        };
        if self.is_collective() && name(&self.kind) != name(&other.kind) {
            d.push("the collective");
        }
        if self.dtype != other.dtype {
            d.push("the element type");
        }
        if self.count != other.count {
            d.push("the count");
        }
        match (self.kind, other.kind) {
            (CallKind::AllReduce(a), CallKind::AllReduce(b))
            | (CallKind::ReduceScatter(a), CallKind::ReduceScatter(b))
                if a != b =>
            {
                d.push("the operator");
            }
            (CallKind::Broadcast { root: a }, CallKind::Broadcast { root: b }) if a != b => d.push("the root"),
            _ => {}
        }
        d
    }
}

/// What a call is matched under.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Key {
    /// The `k`-th collective of every rank.
    Collective(u64),
    /// The `i`-th send from `.0` to `.1`, and the `i`-th receive of `.1` from `.0`.
    P2p(usize, usize, u64),
}

impl fmt::Display for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Key::Collective(k) => write!(f, "collective #{}", k + 1),
            Key::P2p(r, p, i) => write!(f, "send #{} from rank {r} to rank {p}", i + 1),
        }
    }
}

/// A call some local ranks have made and others not yet.
#[derive(Clone, Debug)]
struct Open {
    /// The first poster and its call.
    first: (usize, Call),
    /// Whether the first call is enqueued (posted by an earlier batch): another rank may be
    /// waiting for this call in NCCL.
    enqueued: bool,
    /// The local ranks that have posted it.
    posted: BTreeSet<usize>,
    /// The local ranks that must.
    needed: BTreeSet<usize>,
}

/// Two ranks' calls under one number that differ.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Mismatch {
    /// What they were matched under ("collective #3", "send #1 from rank 0 to rank 1").
    pub under: String,
    /// The rank that posted first, and its call.
    pub first: (usize, Call),
    /// The rank whose call differs, and its call.
    pub other: (usize, Call),
    /// The differing fields.
    pub fields: Vec<&'static str>,
    /// Whether the first call was already enqueued (by an earlier batch): its rank may be
    /// waiting in NCCL for a call that will not come.
    pub enqueued: bool,
}

impl fmt::Display for Mismatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "ranks {} and {} of one communicator disagree on their {}: rank {} made {}, rank {} made {} ({} differ{})",
            self.first.0.min(self.other.0),
            self.first.0.max(self.other.0),
            self.under,
            self.first.0,
            self.first.1,
            self.other.0,
            self.other.1,
            self.fields.join(", "),
            if self.fields.len() == 1 { "s" } else { "" }
        )
    }
}

/// Why a batch was refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Refusal {
    /// Two calls under one number differ.
    Mismatch(Box<Mismatch>),
    /// A call waits for a local rank whose communicator is gone: it could never complete.
    Gone {
        /// The call's rank.
        rank: usize,
        /// The call.
        call: Call,
        /// The rank that is gone.
        gone: usize,
    },
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Refusal::Mismatch(m) => m.fmt(f),
            Refusal::Gone { rank, call, gone } => write!(
                f,
                "rank {rank} made {call}, but the communicator of rank {gone} (in this process) was dropped: it could \
                 never complete"
            ),
        }
    }
}

/// The calls of the local ranks of one communicator.
#[derive(Debug, Default)]
pub(crate) struct Ledger {
    /// The ranks that live in this process.
    local: BTreeSet<usize>,
    /// Local ranks whose communicator was dropped.
    gone: BTreeSet<usize>,
    coll_next: HashMap<usize, u64>,
    send_next: HashMap<(usize, usize), u64>,
    recv_next: HashMap<(usize, usize), u64>,
    open: HashMap<Key, Open>,
}

impl Ledger {
    /// Adds a local rank; `false` if it is one already.
    pub(crate) fn join(&mut self, rank: usize) -> bool {
        self.local.insert(rank)
    }

    /// Removes a local rank that never made a call (its communicator was not made).
    pub(crate) fn unjoin(&mut self, rank: usize) {
        self.local.remove(&rank);
    }

    /// The local ranks.
    #[cfg(test)]
    pub(crate) fn local(&self) -> &BTreeSet<usize> {
        &self.local
    }

    /// Notes that `rank`'s communicator is gone; returns the first open call that waited for
    /// it, if any (its poster's NCCL call can never complete).
    pub(crate) fn leave(&mut self, rank: usize) -> Option<(usize, Call)> {
        self.gone.insert(rank);
        self.open
            .values()
            .find(|o| o.enqueued && o.needed.contains(&rank) && !o.posted.contains(&rank))
            .map(|o| o.first)
    }

    /// The local ranks a call of `rank` must be matched with (itself included), or `None` when
    /// there is nothing to compare (one local rank; a peer in another process).
    fn needed(&self, rank: usize, call: &Call) -> Option<BTreeSet<usize>> {
        if call.is_collective() {
            (self.local.len() > 1).then(|| self.local.clone())
        } else {
            let peer = match call.kind {
                CallKind::Send(p) | CallKind::Recv(p) => p,
                _ => unreachable!(),
            };
            (peer != rank && self.local.contains(&peer)).then(|| [rank, peer].into_iter().collect())
        }
    }

    /// Posts a batch of calls (one group: each `(rank, call)` in the order made): all of them,
    /// or, if one is refused, none.
    pub(crate) fn post(&mut self, batch: &[(usize, Call)]) -> Result<(), Refusal> {
        let mut coll_next: HashMap<usize, u64> = HashMap::new();
        let mut send_next: HashMap<(usize, usize), u64> = HashMap::new();
        let mut recv_next: HashMap<(usize, usize), u64> = HashMap::new();
        let mut draft: HashMap<Key, Open> = HashMap::new();
        for &(rank, call) in batch {
            let Some(needed) = self.needed(rank, &call) else { continue };
            if let Some(&gone) = needed.iter().find(|r| self.gone.contains(r)) {
                return Err(Refusal::Gone { rank, call, gone });
            }
            let key = match call.kind {
                CallKind::Send(p) => {
                    let n = send_next.entry((rank, p)).or_insert_with(|| *self.send_next.get(&(rank, p)).unwrap_or(&0));
                    *n += 1;
                    Key::P2p(rank, p, *n - 1)
                }
                CallKind::Recv(p) => {
                    let n = recv_next.entry((p, rank)).or_insert_with(|| *self.recv_next.get(&(p, rank)).unwrap_or(&0));
                    *n += 1;
                    Key::P2p(p, rank, *n - 1)
                }
                _ => {
                    let n = coll_next.entry(rank).or_insert_with(|| *self.coll_next.get(&rank).unwrap_or(&0));
                    *n += 1;
                    Key::Collective(*n - 1)
                }
            };
            let open = match draft.get(&key).or_else(|| self.open.get(&key)) {
                Some(o) => {
                    let mut o = o.clone();
                    let fields = match (o.first.1.kind, call.kind) {
                        // A send and its receive: type and count.
                        (CallKind::Send(_), CallKind::Recv(_)) | (CallKind::Recv(_), CallKind::Send(_)) => {
                            let mut d = Vec::new();
                            if o.first.1.dtype != call.dtype {
                                d.push("the element type");
                            }
                            if o.first.1.count != call.count {
                                d.push("the count");
                            }
                            d
                        }
                        // Two sends (or two receives) under one key: the same side twice can't
                        // happen (each side numbers its own).
                        _ => o.first.1.differences(&call),
                    };
                    if !fields.is_empty() {
                        return Err(Refusal::Mismatch(Box::new(Mismatch {
                            under: key.to_string(),
                            first: o.first,
                            other: (rank, call),
                            fields,
                            enqueued: o.enqueued,
                        })));
                    }
                    o.posted.insert(rank);
                    o
                }
                None => Open { first: (rank, call), enqueued: false, posted: [rank].into_iter().collect(), needed },
            };
            draft.insert(key, open);
        }
        // Commit.
        self.coll_next.extend(coll_next);
        self.send_next.extend(send_next);
        self.recv_next.extend(recv_next);
        for (key, mut open) in draft {
            if open.posted == open.needed {
                self.open.remove(&key);
            } else {
                open.enqueued = true;
                self.open.insert(key, open);
            }
        }
        Ok(())
    }

    /// Calls open now (for tests).
    #[cfg(test)]
    fn open_count(&self) -> usize {
        self.open.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ar(count: usize) -> Call {
        Call { kind: CallKind::AllReduce(ReduceOp::Sum), dtype: 7, count }
    }
    fn send(to: usize, count: usize) -> Call {
        Call { kind: CallKind::Send(to), dtype: 2, count }
    }
    fn recv(from: usize, count: usize) -> Call {
        Call { kind: CallKind::Recv(from), dtype: 2, count }
    }
    fn ledger(local: &[usize]) -> Ledger {
        let mut l = Ledger::default();
        for &r in local {
            assert!(l.join(r));
        }
        l
    }
    fn mismatch(r: Result<(), Refusal>) -> Mismatch {
        match r {
            Err(Refusal::Mismatch(m)) => *m,
            other => panic!("expected a mismatch, got {other:?}"),
        }
    }

    /// One thread, one group of both ranks (the single-process pattern): matched in the batch,
    /// nothing left open.
    #[test]
    fn one_group_of_every_rank_matches_at_once() {
        let mut l = ledger(&[0, 1]);
        for _ in 0..3 {
            l.post(&[(0, ar(64)), (1, ar(64))]).unwrap();
        }
        assert_eq!(l.open_count(), 0);
    }

    /// Two threads, each its own rank, in any interleaving: each call is compared with the
    /// other rank's call of the same number when it comes, without waiting.
    #[test]
    fn two_threads_match_by_number_in_any_order() {
        let mut l = ledger(&[0, 1]);
        l.post(&[(0, ar(64))]).unwrap();
        l.post(&[(0, ar(128))]).unwrap();
        assert_eq!(l.open_count(), 2);
        l.post(&[(1, ar(64))]).unwrap();
        l.post(&[(1, ar(128))]).unwrap();
        assert_eq!(l.open_count(), 0);
        // Rank 1 ahead this time.
        l.post(&[(1, ar(8))]).unwrap();
        l.post(&[(0, ar(8))]).unwrap();
        assert_eq!(l.open_count(), 0);
    }

    /// The regression of issue 31 item 9: counts that differ between two threads' calls are
    /// refused, naming both ranks, the call number and the field.
    #[test]
    fn different_counts_from_two_threads_are_refused() {
        let mut l = ledger(&[0, 1]);
        l.post(&[(0, ar(64))]).unwrap();
        let m = mismatch(l.post(&[(1, ar(32))]));
        assert_eq!((m.first.0, m.other.0, m.fields.clone(), m.enqueued), (0, 1, vec!["the count"], true));
        let text = m.to_string();
        assert!(text.contains("ranks 0 and 1") && text.contains("collective #1") && text.contains("count"), "{text}");
    }

    #[test]
    fn every_field_is_compared() {
        let base = Call { kind: CallKind::Broadcast { root: 0 }, dtype: 7, count: 10 };
        let cases = [
            (Call { kind: CallKind::Broadcast { root: 1 }, ..base }, vec!["the root"]),
            (Call { dtype: 8, ..base }, vec!["the element type"]),
            (Call { count: 11, ..base }, vec!["the count"]),
            (Call { kind: CallKind::AllGather, ..base }, vec!["the collective"]),
        ];
        for (other, fields) in cases {
            let mut l = ledger(&[0, 1]);
            l.post(&[(0, base)]).unwrap();
            assert_eq!(mismatch(l.post(&[(1, other)])).fields, fields, "{other}");
        }
        let mut l = ledger(&[0, 1]);
        l.post(&[(0, ar(4))]).unwrap();
        let max = Call { kind: CallKind::AllReduce(ReduceOp::Max), ..ar(4) };
        assert_eq!(mismatch(l.post(&[(1, max)])).fields, vec!["the operator"]);
    }

    /// A refused batch changes nothing: the numbers stay where they were, so the correct call
    /// still matches (and a mismatch inside one batch is not an enqueued one).
    #[test]
    fn a_refused_batch_posts_nothing() {
        let mut l = ledger(&[0, 1]);
        let m = mismatch(l.post(&[(0, ar(64)), (1, ar(32))]));
        assert!(!m.enqueued, "both calls were in the refused batch: nothing waits in NCCL");
        assert_eq!(l.open_count(), 0);
        l.post(&[(0, ar(64)), (1, ar(64))]).unwrap();
        assert_eq!(l.open_count(), 0);
    }

    #[test]
    fn sends_match_receives_per_pair_in_order() {
        let mut l = ledger(&[0, 1, 2]);
        // A ring in one batch.
        l.post(&[(0, send(1, 5)), (0, recv(2, 6)), (1, send(2, 7)), (1, recv(0, 5)), (2, send(0, 6)), (2, recv(1, 7))])
            .unwrap();
        assert_eq!(l.open_count(), 0);
        // Two sends 0 → 1 from one thread, the receives later from another: i-th with i-th.
        l.post(&[(0, send(1, 1)), (0, send(1, 2))]).unwrap();
        let m = mismatch(l.post(&[(1, recv(0, 2))]));
        assert_eq!(m.fields, vec!["the count"]);
        assert!(m.to_string().contains("send #2 from rank 0 to rank 1"), "{m}");
        // Collectives and point-to-point calls are numbered apart.
        let mut l = ledger(&[0, 1]);
        l.post(&[(0, send(1, 3)), (0, ar(9))]).unwrap();
        l.post(&[(1, ar(9)), (1, recv(0, 3))]).unwrap();
        assert_eq!(l.open_count(), 0);
    }

    /// A peer in another process, or one local rank: nothing to compare, nothing kept.
    #[test]
    fn remote_peers_and_single_ranks_are_not_tracked() {
        let mut l = ledger(&[0]);
        l.post(&[(0, ar(1)), (0, send(3, 4))]).unwrap();
        assert_eq!(l.open_count(), 0);
    }

    #[test]
    fn a_dropped_local_rank_refuses_calls_that_need_it() {
        let mut l = ledger(&[0, 1]);
        l.post(&[(0, ar(2))]).unwrap();
        // Rank 1 goes while rank 0's call waits for it.
        assert_eq!(l.leave(1), Some((0, ar(2))));
        assert!(matches!(l.post(&[(0, ar(2))]), Err(Refusal::Gone { rank: 0, gone: 1, .. })));
        assert!(matches!(l.post(&[(0, send(1, 2))]), Err(Refusal::Gone { gone: 1, .. })));
    }
}
