//! Child processes spawned and stop signals sent while kernels run.

use super::*;

/// A child process's launch on its own device (the CPU device, or the GPU).
pub(super) fn tiny_launch_child() -> Result<(), String> {
    let (gpu, tests) = child_ctx()?;
    let fill = k::hostile_fill::load(&tests).ctx("load")?;
    let mut out = gpu.zeroed::<u32>(1000).ctx("alloc")?;
    fill.launch(gpu.stream(), LaunchConfig::for_elements(1000, 128), 17, &mut out).ctx("launch")?;
    let want: Vec<u32> = (0..1000u32).map(|i| 17 + i).collect();
    check_all("child", &out.to_vec().ctx("read")?, &want)?;
    println!("CHILD OK");
    Ok(())
}

pub(super) fn spawn_while_launching(c: &Ctx) -> TestResult {
    // There is no safe `fork` (std spawns children with fork+exec or posix_spawn; `pre_exec` is
    // `unsafe`): what safe code can do is start processes while kernels, pinned memory and
    // streams are in use, and have them use the device too.
    let n = c.pick(1usize << 20, 1 << 12);
    let fill = k::hostile_fill::load(&c.tests).ctx("load")?;
    let stop = std::sync::atomic::AtomicBool::new(false);
    let launched: TestResult = std::thread::scope(|scope| {
        let worker = scope.spawn(|| -> TestResult {
            let s = c.gpu.new_stream().ctx("stream")?;
            let mut out = c.gpu.zeroed::<u32>(n).ctx("alloc")?;
            let mut host = c.gpu.pinned::<u32>(n).ctx("pinned")?;
            let mut round = 0u32;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) || round < 3 {
                fill.launch(&s, LaunchConfig::for_elements(n, 256), round, &mut out).ctx("launch")?;
                s.copy(&out, &mut host).ctx("copy")?;
                let want: Vec<u32> = (0..n as u32).map(|i| round.wrapping_add(i)).collect();
                check_all(&format!("round {round}"), host.as_slice().ctx("view")?, &want)?;
                round += 1;
            }
            Ok(())
        });
        let mut spawned = Ok(());
        for _ in 0..3 {
            match run_child("tiny-launch", Duration::from_secs(120)) {
                Ok((Some(st), text)) if st.success() && text.contains("CHILD OK") => {}
                Ok((st, text)) => {
                    spawned = Err(format!("child ({st:?}):\n{text}"));
                    break;
                }
                Err(e) => {
                    spawned = Err(e);
                    break;
                }
            }
        }
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        let worked = worker.join().unwrap_or_else(|_| Err("the launching thread panicked".into()));
        spawned.and(worked)
    });
    launched
}

pub(super) fn stop_signals(c: &Ctx) -> TestResult {
    // No safe API installs a signal handler; what safe code can do to its own process is have
    // another process stop and continue it (SIGSTOP/SIGCONT) while kernels run and the host
    // waits, which interrupts blocking calls on Linux.
    let pid = std::process::id().to_string();
    let script = "for i in 1 2 3 4 5 6 7 8; do kill -STOP $1; sleep 0.03; kill -CONT $1; sleep 0.03; done";
    let Ok(mut stopper) = Command::new("sh").args(["-c", script, "stopper", &pid]).spawn() else {
        println!("no `sh` here: not run");
        return Ok(());
    };
    let n = c.pick(1usize << 20, 1 << 14);
    let fill = k::hostile_fill::load(&c.tests).ctx("load")?;
    let (s1, s2) = (c.gpu.new_stream().ctx("stream")?, c.gpu.new_stream().ctx("stream")?);
    let mut a = c.gpu.zeroed::<u32>(n).ctx("alloc")?;
    let mut b = c.gpu.zeroed::<u32>(n).ctx("alloc")?;
    let mut host = c.gpu.pinned::<u32>(n).ctx("pinned")?;
    let started = Instant::now();
    let mut round = 0u32;
    while started.elapsed() < Duration::from_millis(700) || round < 5 {
        fill.launch(&s1, LaunchConfig::for_elements(n, 256), round, &mut a).ctx("launch")?;
        s2.copy(&a, &mut b).ctx("copy on another stream")?;
        s2.copy(&b, &mut host).ctx("copy to pinned")?;
        let want: Vec<u32> = (0..n as u32).map(|i| round.wrapping_add(i)).collect();
        check_all(&format!("round {round}"), host.as_slice().ctx("view")?, &want)?;
        round += 1;
    }
    let _ = stopper.wait();
    Ok(())
}
