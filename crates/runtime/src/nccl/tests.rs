//! Unit tests of the NCCL module's parts that need no GPU (the id file, the library loader,
//! the bounded wait, the operator codes).

use std::sync::Arc;
use std::time::{Duration, Instant};

use super::create::settle;
use super::library::{NCCL_IN_PROGRESS, NCCL_SUCCESS, RawComm, RawResult};
use super::watch::Cell;
use super::*;
use crate::error::Error;

fn tmp(name: &str) -> std::path::PathBuf {
    std::env::temp_dir().join(format!("cohort-nccl-test-{}-{name}", std::process::id()))
}

#[test]
fn id_file_round_trip() {
    let path = tmp("round");
    let mut bytes = [0u8; ID_BYTES];
    for (i, b) in bytes.iter_mut().enumerate() {
        *b = (i * 7 + 3) as u8;
    }
    let id = NcclId::from_bytes(bytes);
    id.write_file(&path).unwrap();
    let back = NcclId::read_file(&path, Duration::from_secs(1)).unwrap();
    assert_eq!(back, id);
    assert_eq!(back.as_bytes(), &bytes);
    std::fs::remove_file(&path).unwrap();
}

#[test]
fn id_file_waits_for_the_writer() {
    let path = tmp("wait");
    let p2 = path.clone();
    let id = NcclId::from_bytes([42; ID_BYTES]);
    let writer = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(100));
        id.write_file(&p2).unwrap();
    });
    let back = NcclId::read_file(&path, Duration::from_secs(10)).unwrap();
    writer.join().unwrap();
    assert_eq!(back, id);
    std::fs::remove_file(&path).unwrap();
}

#[test]
fn id_file_times_out() {
    let path = tmp("never");
    let t = Instant::now();
    let e = NcclId::read_file(&path, Duration::from_millis(50)).unwrap_err();
    assert!(t.elapsed() >= Duration::from_millis(50));
    assert!(matches!(e, NcclError::IdExchange(ref m) if m.contains("did not appear")), "{e}");
}

#[test]
fn id_file_rejects_other_content() {
    let path = tmp("junk");
    std::fs::write(&path, b"not an id").unwrap();
    let e = NcclId::read_file(&path, Duration::from_secs(1)).unwrap_err();
    assert!(matches!(e, NcclError::IdExchange(ref m) if m.contains("not an NCCL id")), "{e}");
    std::fs::remove_file(&path).unwrap();
}

#[test]
fn not_found_says_how_to_get_it() {
    let e = NcclError::NotFound("libnccl.so.2: cannot open".into()).to_string();
    assert!(e.starts_with("NCCL (libnccl.so.2) not found"), "{e}");
    assert!(e.contains("nvidia-nccl-cu13") && e.contains("COHORT_NCCL"), "{e}");
}

#[test]
fn missing_library_is_an_error_not_a_panic() {
    if available() {
        return; // NCCL is installed here: nothing to check
    }
    assert!(matches!(NcclId::new(), Err(NcclError::NotFound(_))));
    assert!(matches!(version(), Err(NcclError::NotFound(_))));
}

#[test]
fn present_library_loads_every_entry_point() {
    let Ok((major, minor, patch)) = version() else { return }; // no NCCL here
    println!("NCCL {major}.{minor}.{patch}");
    assert_eq!(major, 2);
    assert!(minor >= 12, "NCCL 2.{minor}");
    // Making an id needs no GPU (it names this host's bootstrap address), only a network
    // interface: an error is fine, a panic is not.
    if let Ok(id) = NcclId::new() {
        assert_ne!(id.as_bytes(), &[0u8; ID_BYTES]);
    }
}

#[test]
fn no_gpu_and_empty_group_need_no_nccl() {
    assert!(matches!(Comm::for_gpus(&[]), Err(NcclError::Cohort(Error::Argument(ref m))) if m.contains("no GPU")));
    assert!(Group::new().run().is_ok());
    assert!(Group::new().is_empty());
}

/// The bounded wait of creating or enqueueing on a non-blocking communicator, with NCCL
/// mocked: a communicator that stays in progress is aborted at the deadline, with an
/// error naming what was being done and the deadline; one that fails, at once.
#[test]
fn settling_a_communicator_is_bounded() {
    unsafe extern "C" fn in_progress(_: RawComm, out: *mut RawResult) -> RawResult {
        // SAFETY: the caller passes a live int.
        unsafe { *out = NCCL_IN_PROGRESS };
        NCCL_SUCCESS
    }
    unsafe extern "C" fn remote_error(_: RawComm, out: *mut RawResult) -> RawResult {
        // SAFETY: as above.
        unsafe { *out = 6 };
        NCCL_SUCCESS
    }
    unsafe extern "C" fn no_abort(_: RawComm) -> RawResult {
        NCCL_SUCCESS
    }
    let aborted = std::sync::Mutex::new(Vec::new());
    let abort = |why: &str| aborted.lock().unwrap().push(why.to_owned());
    let stuck = [Arc::new(Cell::new(1, None, 0x10 as RawComm, no_abort, in_progress))];
    let t0 = Instant::now();
    let e = settle(&stuck, t0, Duration::from_millis(50), &|| "enqueueing all_reduce".into(), &String::new, &abort)
        .unwrap_err();
    assert!(t0.elapsed() >= Duration::from_millis(50));
    let text = e.to_string();
    assert!(matches!(e, NcclError::Aborted(_)) && text.contains("enqueueing all_reduce did not finish within 0.1 s"));
    let failed = [Arc::new(Cell::new(2, None, 0x11 as RawComm, no_abort, remote_error))];
    let e = settle(&failed, Instant::now(), Duration::from_secs(60), &|| "x".into(), &String::new, &abort).unwrap_err();
    assert!(e.to_string().contains("failed on rank 2"), "{e}");
    assert_eq!(aborted.into_inner().unwrap().len(), 2, "both aborted the communicator");
}

#[test]
fn op_codes_match_nccl_h() {
    let codes: Vec<_> =
        [ReduceOp::Sum, ReduceOp::Prod, ReduceOp::Max, ReduceOp::Min, ReduceOp::Avg].iter().map(|o| o.raw()).collect();
    assert_eq!(codes, [0, 1, 2, 3, 4]);
    assert_eq!((f32::DTYPE, f64::DTYPE, i32::DTYPE, u64::DTYPE), (7, 8, 2, 5));
}
