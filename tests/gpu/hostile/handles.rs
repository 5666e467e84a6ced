//! Re-entrance from host functions, handles dropped while their work is queued, a kernel with two bodies behind one ABI.

use super::*;

/// What a call inside a host function returned: its name and its error's text.
type Outcome = (&'static str, Result<(), String>);

pub(super) fn host_fn_reentrancy(c: &Ctx) -> TestResult {
    let gpu = c.gpu.clone();
    let s = Arc::new(c.gpu.new_stream().ctx("stream")?);
    let other = c.gpu.new_stream().ctx("stream")?;
    let fill = Arc::new(k::hostile_fill::load(&c.tests).ctx("load")?);
    let mut moved = c.gpu.zeroed::<u32>(256).ctx("alloc")?;
    fill.launch(&s, (1u32, 256u32), 4, &mut moved).ctx("launch")?;
    let dropped_stream = c.gpu.new_stream().ctx("stream")?;
    let event = Event::new(&c.gpu).ctx("event")?;
    let seen: Arc<Mutex<Vec<Outcome>>> = Arc::default();
    let (s2, log) = (s.clone(), seen.clone());
    s.host_fn(move || {
        let mut out = match gpu.zeroed::<u32>(256) {
            Ok(b) => Some(b),
            Err(e) => {
                log.lock().unwrap().push(("Gpu::zeroed", Err(e.to_string())));
                None
            }
        };
        let note = |what: &'static str, r: cohort_runtime::Result<()>| {
            log.lock().unwrap().push((what, r.map_err(|e| e.to_string())));
        };
        note("Stream::synchronize (its own stream)", s2.synchronize());
        note("Stream::synchronize (another stream)", other.synchronize());
        if let Some(out) = out.as_mut() {
            note("launch", fill.launch(&other, (1u32, 256u32), 1, out));
        }
        note("DeviceBuffer::to_vec", moved.to_vec().map(drop));
        note("Event::record", event.record(&other));
        note("Event::synchronize", event.synchronize());
        note("Gpu::new_stream", gpu.new_stream().map(drop));
        note("Gpu::synchronize", gpu.synchronize());
        let mut v = vec![0u32; 16];
        note("Gpu::with_registered", gpu.with_registered(&mut v, |_| ()));
        // Dropped here, inside the host function: leaked, not freed (no CUDA call, no wait).
        drop(moved);
        drop(dropped_stream);
    })
    .ctx("host_fn")?;
    let t = Instant::now();
    s.synchronize().ctx("synchronize")?;
    ensure(t.elapsed() < Duration::from_secs(30), || "the host function deadlocked".into())?;
    let seen = seen.lock().unwrap();
    ensure(seen.len() >= 9, || format!("the host function ran {} of its calls", seen.len()))?;
    for (what, r) in seen.iter() {
        match r {
            Err(m) if m.contains("inside a host function") => println!("{what}: {m}"),
            other => return Err(format!("{what} inside a host function: {other:?}")),
        }
    }
    Ok(())
}

pub(super) fn dropped_handles(c: &Ctx) -> TestResult {
    let n = c.pick(1usize << 16, 1 << 10);
    let mut out = c.gpu.zeroed::<u32>(n).ctx("alloc")?;
    // A stream dropped with a slow kernel queued on it.
    {
        let s2 = c.gpu.new_stream().ctx("stream")?;
        let slow = k::hostile_slow::load(&c.tests).ctx("load")?;
        slow.launch(&s2, LaunchConfig::for_elements(n, 256), c.pick(100_000_000u64, 1_000_000), 8, &mut out)
            .ctx("launch")?;
    }
    let want: Vec<u32> = (0..n as u32).map(|i| 8 + i).collect();
    check_all("written on a dropped stream", &out.to_vec().ctx("read")?, &want)?;
    // Every handle of the device dropped while a buffer lives: the buffer still works.
    let kept = {
        let gpu = c.gpu.clone();
        let module = own_module(c)?;
        let fill = k::hostile_fill::load(&module).ctx("load")?;
        let s = gpu.new_stream().ctx("stream")?;
        let mut b = gpu.zeroed::<u32>(n).ctx("alloc")?;
        fill.launch(&s, LaunchConfig::for_elements(n, 256), 6, &mut b).ctx("launch")?;
        b
    };
    let want: Vec<u32> = (0..n as u32).map(|i| 6 + i).collect();
    check_all("a buffer whose device handles are gone", &kept.to_vec().ctx("read")?, &want)?;
    // An event recorded on a stream that is then dropped: other streams and the host can still
    // wait for it.
    let event = Event::new(&c.gpu).ctx("event")?;
    {
        let s1 = c.gpu.new_stream().ctx("stream")?;
        let fill = k::hostile_fill::load(&c.tests).ctx("load")?;
        fill.launch(&s1, LaunchConfig::for_elements(n, 256), 2, &mut out).ctx("launch")?;
        s1.record(&event).ctx("record")?;
    }
    let s3 = c.gpu.new_stream().ctx("stream")?;
    s3.wait(&event).ctx("wait for an event of a dropped stream")?;
    event.synchronize().ctx("host wait for it")?;
    s3.synchronize().ctx("synchronize")?;
    // Timing events that were never recorded, or cannot time: errors, not hangs.
    let (e1, e2) = (Event::new(&c.gpu).ctx("event")?, Event::new(&c.gpu).ctx("event")?);
    match e2.elapsed_ms_since(&e1) {
        Err(e) => println!("elapsed between unrecorded events: {e}"),
        Ok(ms) => println!("elapsed between unrecorded events: {ms} ms (accepted by this device)"),
    }
    let u = Event::untimed(&c.gpu).ctx("untimed")?;
    s3.record(&u).ctx("record")?;
    s3.record(&e1).ctx("record")?;
    ensure(e1.elapsed_ms_since(&u).is_err(), || "timing an untimed event".into())?;
    // Two handles of the CPU device (or two opens of one GPU): their streams and events mix.
    let again = if c.is_cpu() { Gpu::cpu() } else { Gpu::from_env() }.ctx("open again")?;
    let s4 = again.new_stream().ctx("stream")?;
    match s4.wait(&event) {
        Ok(()) => println!("a second handle's stream waits for the first's event"),
        Err(e) => println!("a second handle's stream and the first's event: {e}"),
    }
    let want: Vec<u32> = (0..n as u32).map(|i| 2 + i).collect();
    check_all("after the waits", &out.to_vec().ctx("read")?, &want)
}

pub(super) fn split_body(c: &Ctx) -> TestResult {
    let kern = k::hostile_split_body::load(&c.tests).ctx("load (one ABI on both sides)")?;
    let s = c.gpu.new_stream().ctx("stream")?;
    let mut out = c.gpu.zeroed::<u32>(256).ctx("alloc")?;
    let r = kern.launch(&s, (2u32, 128u32), &mut out);
    if c.is_cpu() {
        // The CPU device runs the host body, on the fast path its PTX allowed: the barrier the
        // PTX does not have is an error, not a barrier that meets nobody.
        match r {
            Err(e) => {
                let msg = e.to_string();
                println!("{msg}");
                ensure(msg.contains("fast-path"), || format!("unexpected error: {msg}"))
            }
            Ok(()) => Err("a barrier ran on the fast path".into()),
        }
    } else {
        r.ctx("launch")?;
        let want: Vec<u32> = (0..256u32).map(|i| 7 + i).collect();
        check_all("device body", &out.to_vec().ctx("read")?, &want)
    }
}
