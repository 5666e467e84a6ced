//! What can be checked without a GPU: cudarc's memory is refused where it cannot go, before
//! anything runs or is recorded. The protocol itself (cudarc's events, streams, lending) is
//! exercised by `tests/gpu/interop.rs` on a GPU.

use super::*;
use crate::StreamOptions;
use crate::stream::Capture;
use crate::track::{AllocKind, Use};
use cudarc::driver::CudaEvent;

/// cudarc memory that is never reached: the refusals come first.
struct Unreachable;

impl Foreign for Unreachable {
    fn context(&self) -> &Arc<CudaContext> {
        unreachable!("the refusal comes before the context is compared")
    }
    fn home(&self) -> &Arc<CudaStream> {
        unreachable!("the refusal comes before the home stream is used")
    }
    fn order<'s>(&'s self, _: &'s CudaStream) -> Result<Option<&'s CudaEvent>> {
        unreachable!("the refusal comes before cudarc's record is read")
    }
    fn describe(&self) -> String {
        "cudarc memory (test)".into()
    }
}

#[test]
fn cudarc_memory_on_the_cpu_device_is_refused_before_anything_runs() {
    let gpu = Gpu::cpu().unwrap();
    let s = gpu.new_stream().unwrap();
    let mut buf = gpu.zeroed::<u32>(64).unwrap();
    let fake = Unreachable;
    let uses = [crate::memory::buffer_use(&buf, true), Use::foreign(&fake, false)];
    let mut ran = false;
    let r = crate::track::run_tracked(&s.inner, &uses, || {
        ran = true;
        Ok(())
    });
    match r {
        Err(Error::NotOnCpu { what }) => assert!(what.contains("cudarc memory (test)"), "{what}"),
        other => panic!("expected NotOnCpu, got {other:?}"),
    }
    assert!(!ran, "nothing ran");
    assert_eq!(buf.pending_accesses(), 0, "nothing was recorded, not even the Cohort operand");
    assert!(!s.inner.interop.exposed(), "a refused operation does not mark the stream");
    buf.fill_zero().unwrap();
}

#[test]
fn cudarc_memory_is_refused_in_a_cohort_graph_capture() {
    let gpu = Gpu::cpu().unwrap();
    let s = gpu.new_stream_with(StreamOptions::new().non_blocking(true)).unwrap();
    // `s` as `Stream::capture` leaves it (the CPU device has no graphs: see `stream`'s tests).
    let c = Arc::new(Capture::new_for_tests());
    *s.inner.capture.write().unwrap() = Some(c.clone());
    let buf = gpu.zeroed::<u32>(64).unwrap();
    let fake = Unreachable;
    let uses = [crate::memory::buffer_use(&buf, false), Use::foreign(&fake, true)];
    let r = crate::track::run_tracked(&s.inner, &uses, || Ok(()));
    match r {
        Err(Error::Argument(m)) => assert!(m.contains("cannot be captured into a Cohort graph"), "{m}"),
        other => panic!("expected a refusal, got {other:?}"),
    }
    assert!(c.is_empty_for_tests(), "the capture kept nothing");
    c.end_for_tests();
}

#[test]
fn the_placeholder_is_never_a_real_allocation() {
    let p = placeholder();
    assert_eq!((p.ptr, p.kind), (0, AllocKind::Registered));
    assert_eq!(p.gpu.kind(), crate::backend::Kind::Cpu);
    assert_eq!(p.pending(), 0);
    let fake = Unreachable;
    let u = Use::foreign(&fake, true);
    assert_eq!((u.start, u.end, u.owner.is_none()), (0, 0, true), "an empty range that nothing keeps");
}

#[test]
fn an_exposed_stream_of_the_cpu_device_still_works() {
    let gpu = Gpu::cpu().unwrap();
    let s = gpu.new_stream().unwrap();
    s.inner.interop.exposed.store(true, Ordering::Release);
    let mut buf = gpu.zeroed::<u32>(8).unwrap();
    s.fill(&mut buf, 5u32).unwrap();
    assert_eq!(buf.to_vec().unwrap(), vec![5u32; 8]);
    assert!(matches!(s.cudarc(), Err(Error::NotOnCpu { .. })));
    assert!(matches!(buf.with_cudarc(&s, |_, _| ()), Err(Error::NotOnCpu { .. })));
    assert_eq!(buf.to_vec().unwrap(), vec![5u32; 8], "the refused lend changed nothing");
}
