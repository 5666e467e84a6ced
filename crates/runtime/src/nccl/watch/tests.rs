use std::sync::atomic::Ordering;

use super::record::OpStatus;
use super::*;
use crate::nccl::ReduceOp;
use crate::nccl::ledger::{Call, CallKind};
use crate::nccl::library::{NCCL_IN_PROGRESS, NCCL_SUCCESS, RawComm, RawResult};
use crate::nccl::{NcclError, NcclId};
use crate::stream::StreamWork;

/// Aborts per (fake) handle.
static ABORTED: Mutex<Vec<usize>> = Mutex::new(Vec::new());
static QUERY: std::sync::atomic::AtomicI32 = std::sync::atomic::AtomicI32::new(0);

unsafe extern "C" fn mock_abort(c: RawComm) -> RawResult {
    lock(&ABORTED).push(c as usize);
    0
}
unsafe extern "C" fn ready(_: RawComm, out: *mut RawResult) -> RawResult {
    // SAFETY: the caller passes a live int.
    unsafe { *out = NCCL_SUCCESS };
    0
}
unsafe extern "C" fn mock_query(_: RawComm, out: *mut RawResult) -> RawResult {
    // SAFETY: the caller passes a live int.
    unsafe { *out = QUERY.load(Ordering::SeqCst) };
    0
}

/// A cell whose handle is the fake `id`, seen only by the mocks.
fn cell(rank: usize, id: usize) -> Arc<Cell> {
    Arc::new(Cell::new(rank, None, id as RawComm, mock_abort, ready))
}

fn aborts(id: usize) -> usize {
    lock(&ABORTED).iter().filter(|&&h| h == id).count()
}

fn ar(count: usize) -> Call {
    Call { kind: CallKind::AllReduce(ReduceOp::Sum), dtype: 7, count }
}

#[test]
fn judge_waits_then_aborts_past_the_deadline_or_on_an_error() {
    let t0 = Instant::now();
    let d = Duration::from_millis(100);
    assert_eq!(judge(t0 + Duration::from_secs(9), None, d, None), Verdict::Wait, "not started: no deadline");
    assert_eq!(judge(t0 + Duration::from_millis(50), Some(t0), d, None), Verdict::Wait);
    let Verdict::Abort(why) = judge(t0 + Duration::from_millis(150), Some(t0), d, None) else { panic!() };
    assert!(why.contains("did not complete within 0.1 s") && why.contains(TIMEOUT_VAR), "{why}");
    let Verdict::Abort(why) = judge(t0, None, d, Some((1, 6))) else { panic!() };
    assert!(why.contains("error 6 on rank 1"), "{why}");
}

#[test]
fn the_timeout_variable_is_positive_seconds_or_the_default() {
    assert_eq!(parse_timeout(Some("2.5")), Duration::from_millis(2500));
    assert_eq!(parse_timeout(Some(" 60 ")), Duration::from_secs(60));
    for bad in [None, Some(""), Some("soon"), Some("0"), Some("-3"), Some("inf"), Some("NaN"), Some("1e300")] {
        assert_eq!(parse_timeout(bad), DEFAULT_TIMEOUT, "{bad:?}");
    }
}

#[test]
fn poll_until_is_bounded() {
    let t0 = Instant::now();
    assert_eq!(poll_until(t0, Duration::from_millis(30), || Poll::InProgress), Err(Poll::InProgress));
    assert!(t0.elapsed() >= Duration::from_millis(30));
    let mut n = 0;
    assert_eq!(
        poll_until(Instant::now(), Duration::from_secs(5), || {
            n += 1;
            if n < 100 { Poll::InProgress } else { Poll::Ready }
        }),
        Ok(())
    );
    assert_eq!(poll_until(Instant::now(), Duration::from_secs(5), || Poll::Failed(2, 3)), Err(Poll::Failed(2, 3)));
}

/// A call that disagrees with one another rank enqueued aborts the communicator: the
/// pending operation fails (so its stream's waits report it), every handle is aborted
/// once, and later calls are refused with the reason.
#[test]
fn a_mismatch_with_an_enqueued_call_aborts_and_fails_the_pending_operation() {
    let rec = Record::new(2, None);
    rec.join_all([0, 1]);
    let (c0, c1) = (cell(0, 0x1000), cell(1, 0x1001));
    rec.add_cell(c0.clone());
    rec.add_cell(c1.clone());
    let op0 = Arc::new(OpState::new("all_reduce of 64 f32 (Sum) on rank 0".into(), vec![], vec![c0.clone()]));
    rec.post(&[(0, ar(64))], &op0).unwrap();
    let op1 = Arc::new(OpState::new("all_reduce of 32 f32 (Sum) on rank 1".into(), vec![], vec![c1.clone()]));
    let e = rec.post(&[(1, ar(32))], &op1).unwrap_err();
    let text = e.to_string();
    assert!(matches!(e, NcclError::Mismatch(_)), "{e:?}");
    assert!(text.contains("ranks 0 and 1") && text.contains("count") && text.contains("aborted"), "{text}");
    assert!(matches!(op0.status(), OpStatus::Failed(ref w) if w.contains("count")), "{:?}", op0.status());
    assert!(op0.failure().is_some());
    assert_eq!((aborts(0x1000), aborts(0x1001)), (1, 1), "both ranks' handles aborted");
    assert_eq!((c0.state(), c1.state()), (State::Aborted, State::Aborted));
    let again = Arc::new(OpState::new("x".into(), vec![], vec![c0.clone()]));
    assert!(matches!(rec.post(&[(0, ar(64))], &again), Err(NcclError::Aborted(ref w)) if w.contains("count")));
    // Aborting again does nothing.
    rec.abort("again");
    assert_eq!((aborts(0x1000), aborts(0x1001)), (1, 1), "once");
}

/// Within one batch nothing was enqueued: refused, nothing aborted.
#[test]
fn a_mismatch_inside_one_group_refuses_without_aborting() {
    let rec = Record::new(2, None);
    rec.join_all([0, 1]);
    let c0 = cell(0, 0x2000);
    rec.add_cell(c0.clone());
    let op = Arc::new(OpState::new("g".into(), vec![], vec![c0.clone()]));
    assert!(matches!(rec.post(&[(0, ar(64)), (1, ar(65))], &op), Err(NcclError::Mismatch(_))));
    assert!(rec.aborted().is_none());
    assert_eq!((c0.state(), aborts(0x2000)), (State::Ready, 0));
    assert_eq!(op.status(), OpStatus::Pending);
}

#[test]
fn dropping_a_rank_that_another_waits_for_aborts() {
    let rec = Record::new(2, None);
    rec.join_all([0, 1]);
    let c0 = cell(0, 0x3000);
    rec.add_cell(c0.clone());
    let op = Arc::new(OpState::new("all_reduce on rank 0".into(), vec![], vec![c0.clone()]));
    rec.post(&[(0, ar(8))], &op).unwrap();
    rec.leave(1);
    assert!(rec.aborted().is_some_and(|w| w.contains("rank 1's communicator was dropped")));
    assert!(op.failure().is_some());
    assert_eq!(aborts(0x3000), 1);
}

#[test]
fn the_async_error_of_a_cell_is_read_under_its_lock() {
    let c = Arc::new(Cell::new(3, None, 0x4000 as RawComm, mock_abort, mock_query));
    QUERY.store(NCCL_IN_PROGRESS, Ordering::SeqCst);
    assert_eq!(poll_cells(std::slice::from_ref(&c)), Poll::InProgress);
    QUERY.store(6, Ordering::SeqCst);
    assert_eq!(poll_cells(std::slice::from_ref(&c)), Poll::Failed(3, 6));
    QUERY.store(0, Ordering::SeqCst);
    assert_eq!(poll_cells(std::slice::from_ref(&c)), Poll::Ready);
}

#[test]
fn ids_join_one_record_per_id_and_refuse_a_rank_twice() {
    let id = NcclId::from_bytes([7; super::super::ID_BYTES]);
    let a = Record::join_id(&id, 2, 0).unwrap();
    let b = Record::join_id(&id, 2, 1).unwrap();
    assert!(Arc::ptr_eq(&a, &b));
    assert_eq!(a.local_ranks(), vec![0, 1]);
    assert!(Record::join_id(&id, 2, 1).is_err(), "rank 1 twice");
    assert!(Record::join_id(&id, 3, 2).is_err(), "another size");
    drop((a, b));
    // Gone with its last communicator: the id starts afresh.
    let c = Record::join_id(&id, 2, 1).unwrap();
    assert_eq!(c.local_ranks(), vec![1]);
}
