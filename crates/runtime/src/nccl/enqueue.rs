//! Running a [`Group`]: its calls compared with those of the other ranks of this process, its
//! streams ordered through the first one, its operations enqueued in one NCCL group (bounded
//! by the deadline) and handed to the watchdog.

use std::ffi::{c_int, c_void};
use std::sync::Arc;
use std::time::Instant;

use super::comm::Comm;
use super::create::settle;
use super::error::{NcclError, NcclResult, arg};
use super::group::{Group, Kind, Op};
use super::ledger::Call;
use super::library::{Api, RawComm, api, check};
use super::watch::{self, Cell, OpState, Record};
use crate::stream::{Event, StreamInner, StreamKind};
use crate::track::{Gates, Mark, Use, run_tracked_in};

impl Group<'_> {
    /// Enqueues every operation as one NCCL group, in stream order (see the module docs), and
    /// returns once they are enqueued (not finished: synchronize a stream, or read a buffer,
    /// to wait).
    ///
    /// First the calls are compared with the other calls of their communicators' ranks in this
    /// process (see "Ranks of one process"); then NCCL enqueues them, which a non-blocking
    /// communicator does in the background: this waits for it, at most the communicators'
    /// [`timeout`](super::timeout()); then the watchdog watches the operations until they
    /// finish (see "Hangs").
    ///
    /// # Errors
    /// [`NcclError::Mismatch`] when the calls disagree with one another or with those of
    /// another rank of this process; [`NcclError::Aborted`] when a communicator was aborted, or
    /// is now (NCCL failed, or did not finish enqueueing in time);
    /// [`Error::Argument`](crate::Error::Argument) for the legacy or per-thread default stream,
    /// or a stream capturing a graph; an NCCL or driver failure.
    pub fn run(self) -> NcclResult<()> {
        let Some(first) = self.ops.first() else { return Ok(()) };
        self.check_matching()?;
        let api = api()?;
        self.check_streams()?;
        let lead = first.stream;
        let others = self.other_streams();
        // Every stream's gate, held until all is enqueued: no stream enters a capture
        // meanwhile, and another thread's capture is refused.
        let gates = Gates::take(
            std::iter::once(&*lead.inner).chain(others.iter().map(|o| &*o.stream.inner)),
            "an NCCL operation",
        )?;
        let gate_of = |s: &StreamInner| gates.get(s).expect("taken above");
        for o in &self.ops {
            if gate_of(&o.stream.inner).capture().is_some() {
                return Err(arg(format!(
                    "NCCL {}: a collective cannot be captured into a graph here: a replay's collective could not be \
                     watched, and a rank that never made it would hang the replay",
                    o.call()
                )));
            }
        }
        let lead_gate = gate_of(&lead.inner);
        let (records, cells) = self.communicators();
        let what = self.describe();
        let op = Arc::new(OpState::new(what.clone(), records.clone(), cells.clone()));
        // Compare with the other local ranks' calls, and note the operation as pending.
        self.post(&records, &op)?;
        // Every operand, recorded on the lead stream.
        let uses: Vec<Use<'_>> =
            self.ops.iter().flat_map(|o| o.send.iter().chain(o.recv.iter())).map(|o| o.get()).collect();
        let tracked = lead.inner.gpu.bind().map_err(NcclError::from).and_then(|()| {
            run_tracked_in(&lead.inner, lead_gate, &uses, || {
                // Every stream the group runs on reports its failure from its waits.
                lead.inner.add_foreign(op.clone());
                for o in &others {
                    o.stream.inner.add_foreign(op.clone());
                }
                let start = Mark::record(&lead.inner)?;
                // Fork: the other streams start after the lead's waits.
                if !others.is_empty() {
                    let fork = Event::untimed(&first.comm.gpu)?;
                    fork.record_in(&lead.inner, lead_gate)?;
                    for o in &others {
                        o.stream.wait_in(&fork, gate_of(&o.stream.inner))?;
                    }
                }
                let enqueued = self.enqueue(api, &op, &cells);
                // Join: the lead stream finishes after every stream's part. Recorded even after
                // a failure (whatever was enqueued is covered by the record).
                let mut joined = Ok(());
                for o in &others {
                    let join = Event::untimed(&o.comm.gpu).and_then(|j| {
                        j.record_in(&o.stream.inner, gate_of(&o.stream.inner))?;
                        lead.wait_in(&j, lead_gate)
                    });
                    if let Err(e) = join {
                        joined = Err(NcclError::from(e));
                    }
                }
                // The tracker records on the lead stream next: its context current again.
                let rebound = lead.inner.gpu.bind().map_err(NcclError::from);
                let end = Mark::record(&lead.inner);
                if enqueued.is_ok()
                    && let Ok(end) = end
                {
                    op.set_marks(start, end);
                }
                Ok(enqueued.and(joined).and(rebound))
            })?
        });
        if op.is_enqueued() {
            watch::watch(op);
        } else {
            // Not (wholly) enqueued, but posted: the other local ranks' matching calls would
            // wait forever. (Aborted already if NCCL failed.)
            let why = match &tracked {
                Err(e) => format!("NCCL: enqueueing {what} failed: {e}"),
                Ok(()) => format!("NCCL: enqueueing {what} did not finish"),
            };
            op.abort(&why);
            return Err(tracked.err().unwrap_or(NcclError::Aborted(why)));
        }
        tracked
    }

    /// Refuses the default streams: a collective's failure is reported by its stream's waits.
    fn check_streams(&self) -> NcclResult<()> {
        for o in &self.ops {
            if o.stream.inner.kind != StreamKind::Owned {
                return Err(arg(format!(
                    "NCCL {}: give a stream of its own (Gpu::stream, Gpu::new_stream), not the legacy or per-thread \
                 default stream: the failures of a collective are reported by the waits of the stream it ran on",
                    o.call()
                )));
            }
        }
        Ok(())
    }

    /// The operations whose streams are not the first operation's, one per stream.
    fn other_streams(&self) -> Vec<&Op<'_>> {
        let lead = self.ops[0].stream;
        let mut others: Vec<&Op<'_>> = Vec::new();
        for o in &self.ops {
            if o.stream.inner.key() != lead.inner.key()
                && !others.iter().any(|x| x.stream.inner.key() == o.stream.inner.key())
            {
                others.push(o);
            }
        }
        others
    }

    /// The communicators involved, each once: their records (one per clique) and their cells.
    fn communicators(&self) -> (Vec<Arc<Record>>, Vec<Arc<Cell>>) {
        let mut records: Vec<Arc<Record>> = Vec::new();
        let mut cells: Vec<Arc<Cell>> = Vec::new();
        for o in &self.ops {
            if !records.iter().any(|r| Arc::ptr_eq(r, &o.comm.record)) {
                records.push(o.comm.record.clone());
            }
            if !cells.iter().any(|c| Arc::ptr_eq(c, &o.comm.cell)) {
                cells.push(o.comm.cell.clone());
            }
        }
        (records, cells)
    }

    /// Posts each clique's calls to its record (compared with the other local ranks' calls,
    /// `op` noted as pending); a refusal aborts the cliques posted to before it.
    fn post(&self, records: &[Arc<Record>], op: &Arc<OpState>) -> NcclResult<()> {
        for (i, rec) in records.iter().enumerate() {
            let batch: Vec<(usize, Call)> =
                self.ops.iter().filter(|o| Arc::ptr_eq(&o.comm.record, rec)).map(|o| (o.comm.rank, o.call())).collect();
            if let Err(e) = rec.post(&batch, op) {
                // The calls posted to the other communicators will not be enqueued: ranks of
                // this process that make them would wait forever.
                for r in &records[..i] {
                    r.abort(&format!("NCCL: a group with calls on this communicator was refused: {e}"));
                }
                return Err(e);
            }
        }
        Ok(())
    }

    /// "all_reduce of 64 f32 (Sum) on rank 0, all_reduce of 64 f32 (Sum) on rank 1".
    fn describe(&self) -> String {
        let mut parts: Vec<String> = self.ops.iter().map(|o| format!("{} on rank {}", o.call(), o.comm.rank)).collect();
        if parts.len() > 4 {
            let n = parts.len();
            parts.truncate(3);
            parts.push(format!("{} more", n - 3));
        }
        parts.join(", ")
    }

    /// Ranks of one clique that are both in this group must agree: their k-th collectives have
    /// the same kind, type, count, operator and root, and the sends from `r` to `p` match the
    /// receives of `p` from `r`. (Otherwise NCCL could move more data than a buffer holds;
    /// ranks in other threads or processes are NCCL's contract, as in MPI.)
    fn check_matching(&self) -> NcclResult<()> {
        type Sig = (u8, c_int, usize, c_int, usize);
        let sig = |o: &Op<'_>| -> Option<Sig> {
            match o.kind {
                Kind::AllReduce(op) => Some((0, o.dtype, o.count, op.raw(), 0)),
                Kind::Broadcast(root) => Some((1, o.dtype, o.count, 0, root)),
                Kind::AllGather => Some((2, o.dtype, o.count, 0, 0)),
                Kind::ReduceScatter(op) => Some((3, o.dtype, o.count, op.raw(), 0)),
                Kind::Send(_) | Kind::Recv(_) => None,
            }
        };
        let same_clique = |a: &Comm, b: &Comm| Arc::ptr_eq(&a.record, &b.record);
        let key = |c: &Comm| (Arc::as_ptr(&c.record), c.rank);
        let ranks_of = |c: &Comm| {
            let k = key(c);
            self.ops.iter().filter(move |o| key(o.comm) == k)
        };
        for o in &self.ops {
            // Collectives: against every other rank of the clique present in the group.
            let mine: Vec<Sig> = ranks_of(o.comm).filter_map(sig).collect();
            for p in self.ops.iter().filter(|p| same_clique(p.comm, o.comm) && p.comm.rank != o.comm.rank) {
                let theirs: Vec<Sig> = ranks_of(p.comm).filter_map(sig).collect();
                if mine != theirs {
                    return Err(arg(format!(
                        "NCCL group: ranks {} and {} of one communicator enqueue different collectives (kind, type, \
                         count, operator, root: {mine:?} vs {theirs:?})",
                        o.comm.rank, p.comm.rank
                    )));
                }
            }
            // Sends: against the peer's receives from this rank, if the peer is in the group.
            if let Kind::Send(peer) = o.kind {
                let Some(p) = self.ops.iter().find(|p| same_clique(p.comm, o.comm) && p.comm.rank == peer) else {
                    continue;
                };
                let sends: Vec<(c_int, usize)> = ranks_of(o.comm)
                    .filter(|x| matches!(x.kind, Kind::Send(q) if q == peer))
                    .map(|x| (x.dtype, x.count))
                    .collect();
                let recvs: Vec<(c_int, usize)> = ranks_of(p.comm)
                    .filter(|x| matches!(x.kind, Kind::Recv(q) if q == o.comm.rank))
                    .map(|x| (x.dtype, x.count))
                    .collect();
                if sends != recvs {
                    return Err(arg(format!(
                        "NCCL group: rank {}'s sends to rank {peer} (type, count: {sends:?}) do not match rank {peer}'s \
                         receives from it ({recvs:?})",
                        o.comm.rank
                    )));
                }
            }
        }
        Ok(())
    }

    /// Enqueues the operations (holding every communicator's lock, so that none is aborted
    /// while NCCL uses it), then waits until NCCL has finished enqueueing them (a
    /// non-blocking communicator's `ncclInProgress`), at most `op`'s deadline. A failure aborts
    /// the communicators: the calls were posted, and other ranks' matching calls would wait.
    fn enqueue(&self, api: &Api, op: &OpState, cells: &[Arc<Cell>]) -> NcclResult<()> {
        let started = Instant::now();
        let aborted_why = || {
            self.ops
                .iter()
                .find_map(|o| o.comm.record.aborted())
                .map_or_else(|| "it was aborted".into(), |w| w.to_string())
        };
        let enqueued = {
            let mut order: Vec<&Arc<Cell>> = cells.iter().collect();
            order.sort_unstable_by_key(|c| Arc::as_ptr(c) as usize);
            let guards: Vec<_> = order.iter().map(|c| (Arc::as_ptr(c), c.lock())).collect();
            if guards.iter().any(|(_, g)| g.is_none()) {
                return Err(NcclError::Aborted(format!(
                    "NCCL: {}: the communicator was aborted: {}",
                    op.what,
                    aborted_why()
                )));
            }
            let raw_of = |o: &Op<'_>| {
                guards
                    .iter()
                    .find(|(p, _)| *p == Arc::as_ptr(&o.comm.cell))
                    .and_then(|(_, g)| g.as_ref().map(|h| h.0))
                    .expect("locked above")
            };
            let grouped = self.ops.len() > 1;
            let mut first_err = None;
            if grouped {
                // SAFETY: no arguments; paired with the `group_end` below on every path.
                let rc = unsafe { (api.group_start)() };
                check(api, rc, std::ptr::null_mut(), || "starting a group".into())?;
            }
            for o in &self.ops {
                if let Err(e) = self.enqueue_one(api, o, raw_of(o)) {
                    first_err.get_or_insert(e);
                    break;
                }
            }
            if grouped {
                // SAFETY: closes the group opened above.
                let rc = unsafe { (api.group_end)() };
                if let Err(e) = check(api, rc, std::ptr::null_mut(), || "ending a group".into()) {
                    first_err.get_or_insert(e);
                }
            }
            first_err.map_or(Ok(()), Err)
        };
        if let Err(e) = enqueued {
            let why = format!("NCCL: enqueueing {} failed: {e}", op.what);
            op.abort(&why);
            return Err(NcclError::Aborted(format!("{why}; the communicator is aborted")));
        }
        settle(cells, started, op.timeout(), &|| format!("enqueueing {}", op.what), &aborted_why, &|why| op.abort(why))
    }

    fn enqueue_one(&self, api: &Api, o: &Op<'_>, c: RawComm) -> NcclResult<()> {
        let s = o.send.as_ref().map(|x| x.get());
        let r = o.recv.as_ref().map(|x| x.get());
        let rp = r.as_ref().map_or(0, Use::device_addr) as *mut c_void;
        // In place: NCCL reads and writes the receive buffer.
        let sp = s.as_ref().map_or(rp as u64, Use::device_addr) as *const c_void;
        let st = crate::backend::cuda::stream(o.stream.inner.raw);
        o.comm.gpu.inner.bind()?;
        // SAFETY: `sp`/`rp` are device addresses inside live allocations of the communicator's
        // device (checked when added), borrowed by the group until it has run, of `count`
        // elements of the type `dtype` names (for all-gather's receive and reduce-scatter's
        // send, `size` × `count`: checked when added); the stream is a live stream of the
        // communicator's context; the tracker ordered this operation after conflicting work of
        // other streams and records it once enqueued.
        let (rc, what) = unsafe {
            match o.kind {
                Kind::AllReduce(op) => {
                    ((api.all_reduce)(sp, rp, o.count, o.dtype, op.for_ranks(o.comm.size()), c, st), "all-reduce")
                }
                Kind::Broadcast(root) => ((api.broadcast)(sp, rp, o.count, o.dtype, root as c_int, c, st), "broadcast"),
                Kind::AllGather => ((api.all_gather)(sp, rp, o.count, o.dtype, c, st), "all-gather"),
                Kind::ReduceScatter(op) => (
                    (api.reduce_scatter)(sp, rp, o.count, o.dtype, op.for_ranks(o.comm.size()), c, st),
                    "reduce-scatter",
                ),
                Kind::Send(peer) => ((api.send)(sp, o.count, o.dtype, peer as c_int, c, st), "send"),
                Kind::Recv(peer) => ((api.recv)(rp, o.count, o.dtype, peer as c_int, c, st), "recv"),
            }
        };
        check(api, rc, c, || format!("enqueueing {what} of {} elements on rank {}", o.count, o.comm.rank))
    }
}
