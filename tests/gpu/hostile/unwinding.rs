//! Unwinding out of scopes that lend memory to the device, forgetting and dropping guards.

use super::*;

pub(super) fn unwinding(c: &Ctx) -> TestResult {
    let mut r = rng("hostile_unwinding");
    let n = c.pick(1usize << 22, 1 << 14);
    let data: Vec<u32> = (0..n).map(|_| r.random()).collect();
    let s = c.gpu.new_stream_with(StreamOptions::new().non_blocking(true)).ctx("stream")?;
    let dev = c.gpu.upload(&data).ctx("upload")?;

    // A panic in a `with_registered` scope right after a copy into the memory was enqueued:
    // the scope must wait for the copy before the memory is the caller's again.
    let mut host = vec![0u32; n];
    let unwound = catch_unwind(AssertUnwindSafe(|| {
        c.gpu.with_registered(&mut host, |reg| {
            s.copy(&dev, reg).expect("copy into registered memory");
            panic!("hostile: unwinding out of with_registered");
        })
    }));
    ensure(unwound.is_err(), || "the panic did not unwind".into())?;
    check_all("registered memory after unwinding out of its scope", &host, &data)?;

    // A panic while the host holds a pinned buffer's slice, then a managed buffer's.
    let mut pinned = c.gpu.pinned::<u32>(n).ctx("pinned")?;
    let mut managed = ManagedBuffer::<u32>::new(&c.gpu, n).ctx("managed")?;
    let _ = catch_unwind(AssertUnwindSafe(|| {
        let v = pinned.as_mut_slice().expect("pinned view");
        v[0] = 1;
        let m = managed.as_mut_slice().expect("managed view");
        m[0] = 2;
        panic!("hostile: unwinding with host views");
    }));
    s.copy(&dev, &mut pinned).ctx("copy into pinned")?;
    let fill = k::hostile_fill::load(&c.tests).ctx("load")?;
    fill.launch(&s, LaunchConfig::for_elements(n, 256), 11, &mut managed).ctx("launch on managed")?;
    check_all("pinned after unwinding", pinned.as_slice().ctx("pinned view")?, &data)?;
    let want: Vec<u32> = (0..n as u32).map(|i| 11u32.wrapping_add(i)).collect();
    check_all("managed after unwinding", managed.as_slice().ctx("managed view")?, &want)?;

    // A panic in a pipeline's kernel closure at chunk 2, then the same pipeline again.
    let chunk = n / 8;
    let mut pipe = Pipeline::<u32, u32>::new(&c.gpu, 2, chunk).ctx("pipeline")?;
    let mut output = vec![0u32; n];
    let unwound = catch_unwind(AssertUnwindSafe(|| {
        pipe.run(&data, &mut output, |st, input, out, ch| {
            if ch.index == 2 {
                panic!("hostile: a pipeline closure panics");
            }
            st.copy(input, out)
        })
    }));
    ensure(unwound.is_err(), || "the pipeline's panic did not unwind".into())?;
    let mut output = vec![0u32; n];
    pipe.run(&data, &mut output, |st, input, out, _| st.copy(input, out)).ctx("pipeline again")?;
    check_all("pipeline after a panicking run", &output, &data)?;

    // A panic inside `capture_stdout`: standard output is restored, the next capture works.
    let unwound = catch_unwind(|| cohort_runtime::capture_stdout(|| panic!("hostile: panic in a capture")));
    ensure(unwound.is_err(), || "the capture's panic did not unwind".into())?;
    let ((), text) = cohort_runtime::capture_stdout(|| println!("after the panic")).ctx("capture")?;
    ensure(text.contains("after the panic"), || format!("capture after a panicking capture: {text:?}"))
}

// Forgetting views that have no `Drop` is the attempt itself.
#[allow(clippy::forget_non_drop)]
pub(super) fn forget_and_drop(c: &Ctx) -> TestResult {
    let mut r = rng("hostile_forget_and_drop");
    let s = c.gpu.new_stream().ctx("stream")?;
    // Device side: a `memcpy_async` whose handle is dropped instead of waited for.
    let threads = c.pick(64usize * 256, 4 * 256);
    let src: Vec<u32> = (0..4 * threads).map(|_| r.random()).collect();
    let d = c.gpu.upload(&src).ctx("upload")?;
    let mut out = c.gpu.upload(&vec![0u32; threads]).ctx("alloc")?;
    let kern = k::hostile_drop_async_copy::load(&c.tests).ctx("load")?;
    for round in 0..c.pick(20, 2) {
        kern.launch(&s, LaunchConfig::for_elements(threads, 256), &d, &mut out).ctx("launch")?;
        let want: Vec<u32> = src.chunks(4).map(|w| w.iter().fold(0u32, |a, v| a.wrapping_add(*v))).collect();
        check_all(
            &format!("round {round}: each thread's words after dropping its copy"),
            &out.to_vec().ctx("read")?,
            &want,
        )?;
    }
    // Host side: forgetting views, buffers, streams and events leaks them, nothing else.
    let n = 4096usize;
    let data: Vec<u32> = (0..n).map(|_| r.random()).collect();
    let mut buf = c.gpu.upload(&data).ctx("upload")?;
    let fill = k::hostile_fill::load(&c.tests).ctx("load")?;
    {
        let view = buf.slice_mut(..n / 2);
        std::mem::forget(view);
    }
    fill.launch(&s, LaunchConfig::for_elements(n / 2, 256), 3, buf.slice_mut(..n / 2)).ctx("launch after forget")?;
    let mut want = data.clone();
    for (i, w) in want[..n / 2].iter_mut().enumerate() {
        *w = 3 + i as u32;
    }
    check_all("a buffer after one of its views was forgotten", &buf.to_vec().ctx("read")?, &want)?;
    let mut pinned = c.gpu.pinned_from(&data).ctx("pinned")?;
    std::mem::forget(pinned.slice_mut(..));
    s.copy(&buf, &mut pinned).ctx("copy after forgetting a view")?;
    check_all("pinned after a forgotten view", pinned.as_slice().ctx("view")?, &want)?;
    // A buffer with a kernel still pending, forgotten: leaked, the kernel unaffected.
    let mut leaked = c.gpu.zeroed::<u32>(n).ctx("alloc")?;
    fill.launch(&s, LaunchConfig::for_elements(n, 256), 9, &mut leaked).ctx("launch")?;
    std::mem::forget(leaked);
    std::mem::forget(c.gpu.new_stream().ctx("stream")?);
    std::mem::forget(Event::new(&c.gpu).ctx("event")?);
    s.synchronize().ctx("synchronize after forgetting")
}
