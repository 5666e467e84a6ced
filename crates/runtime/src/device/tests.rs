use super::failure::{Lost, lost_on, record_lost};
use super::*;
use crate::launch::LaunchConfig;
use cudarc::driver::sys::CUresult;

fn suspect(u: &Unfinished) -> Option<(String, usize)> {
    u.suspect().map(|(k, _, n)| (k.to_string(), n))
}

#[test]
fn device_ordinal_from_cohort_device() {
    assert_eq!(parse_device_ordinal(None).unwrap(), 0, "unset: device 0");
    assert_eq!(parse_device_ordinal(Some("")).unwrap(), 0, "blank: device 0");
    assert_eq!(parse_device_ordinal(Some("  ")).unwrap(), 0);
    assert_eq!(parse_device_ordinal(Some("3")).unwrap(), 3);
    assert_eq!(parse_device_ordinal(Some(" 1\n")).unwrap(), 1, "surrounding blanks are ignored");
    assert_eq!(parse_device_ordinal(Some("gpu")).unwrap(), 0, "gpu: device 0, no CPU fall-back");
    assert_eq!(parse_device_ordinal(Some("GPU")).unwrap(), 0);
    for bad in ["gpu1", "-1", "0,1", "1.0", "0x1", "99999999999999999999999"] {
        let e = parse_device_ordinal(Some(bad)).unwrap_err();
        let Error::Argument(m) = &e else { panic!("{bad}: {e:?}") };
        assert!(m.starts_with(&format!("COHORT_DEVICE={bad} is not a device ordinal")), "{m}");
        assert!(m.contains("unset it for device 0"), "the message says how to fix it: {m}");
    }
}

/// Run in a child process with `COHORT_DEVICE` set (the environment is not changed in
/// this process, where other tests run on other threads).
#[test]
fn default_device_follows_cohort_device() {
    const CHILD: &str = "COHORT_DEVICE_TEST_CHILD";
    if std::env::var_os(CHILD).is_some() {
        let want = std::env::var(CHILD).unwrap();
        match want.as_str() {
            "bad" => {
                // Every constructor that picks the default device fails alike, before
                // touching the driver.
                for r in [
                    Gpu::default_ordinal().map(|_| ()),
                    Gpu::from_env().map(|_| ()),
                    Gpu::isolated_from_env().map(|_| ()),
                ] {
                    assert!(
                        matches!(&r, Err(Error::Argument(m)) if m.starts_with("COHORT_DEVICE=second is not a device ordinal")),
                        "{r:?}"
                    );
                }
            }
            n => assert_eq!(Gpu::default_ordinal().unwrap(), n.parse::<usize>().unwrap()),
        }
        return;
    }
    let exe = std::env::current_exe().unwrap();
    for (value, want) in [(Some("second"), "bad"), (Some("2"), "2"), (Some(""), "0"), (None, "0")] {
        let mut cmd = std::process::Command::new(&exe);
        cmd.args(["--exact", "device::tests::default_device_follows_cohort_device", "--test-threads", "1"])
            .env(CHILD, want)
            .env_remove(DEVICE_VAR);
        if let Some(v) = value {
            cmd.env(DEVICE_VAR, v);
        }
        let out = cmd.output().unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success() && text.contains("1 passed"), "COHORT_DEVICE={value:?}: {text}");
    }
}

#[test]
fn the_suspect_is_the_earliest_unfinished_launch() {
    let (a, t, k): (Arc<str>, Arc<str>, Arc<str>) = (Arc::from("a"), Arc::from("t"), Arc::from("k"));
    let cfg = LaunchConfig::new(1, 32);
    let mut u = Unfinished::default();
    assert!(u.suspect().is_none());
    // `a` on stream 2 finishes (its stream was waited for).
    u.note(2, true, &a, cfg);
    u.finished(Finished::Stream(2));
    // `t` traps on stream 1; `k` is launched after it on stream 2, and `t` again on 1.
    u.note(1, true, &t, LaunchConfig::new(1, 64));
    u.note(2, false, &k, cfg);
    u.note(1, true, &t, cfg);
    // `t` is the first that may not have finished; 3 launches are candidates.
    assert_eq!(u.suspect(), Some((t.clone(), LaunchConfig::new(1, 64), 3)));
    // Stream 1 was waited for successfully: the failure is `k`'s, for certain.
    u.finished(Finished::Stream(1));
    assert_eq!(suspect(&u), Some(("k".into(), 1)));
    // A copy on the legacy default stream does not wait for non-blocking stream 2.
    u.finished(Finished::Blocking);
    assert_eq!(suspect(&u), Some(("k".into(), 1)));
    u.finished(Finished::All);
    assert!(u.suspect().is_none());
}

#[test]
fn unfinished_launches_are_bounded() {
    let k: Arc<str> = Arc::from("k");
    let mut u = Unfinished::default();
    for stream in 0..(Unfinished::MAX as u64 + 10) {
        u.note(stream, true, &k, LaunchConfig::new(1, 1));
        u.note(stream, true, &k, LaunchConfig::new(1, 1));
    }
    assert_eq!(u.streams.len(), Unfinished::MAX);
    // The oldest streams were forgotten, the newest kept.
    assert!(u.streams.iter().all(|s| s.0 >= 10));
    assert_eq!(suspect(&u), Some(("k".into(), 2 * Unfinished::MAX)));
}

#[test]
fn a_lost_device_names_its_first_failure_in_later_errors() {
    // An ordinal no real device has, so that the process-wide record touches nothing else.
    let ordinal = 1_000_001;
    let code = DriverError(CUresult::CUDA_ERROR_LAUNCH_FAILED);
    match device_error(ordinal, DriverError(CUresult::CUDA_ERROR_INVALID_VALUE), "creating a context".into()) {
        Error::Driver { what, .. } => assert_eq!(what, "creating a context"),
        e => panic!("before any failure: {e:?}"),
    }
    let first = Lost {
        ordinal,
        kernel: Some(Arc::from("checked_read")),
        config: Some(LaunchConfig::new(1, 64)),
        unfinished: 1,
        panic: Some("panicked at src/checks.rs:10:5 in block (0,0,0) thread (9,0,0)".into()),
    };
    let (kept, is_first) = record_lost(first);
    assert!(is_first);
    let other = Lost { ordinal, kernel: Some(Arc::from("other")), config: None, unfinished: 1, panic: None };
    let (again, is_first) = record_lost(other);
    assert!(!is_first && Arc::ptr_eq(&kept, &again), "the first failure of a device is kept");
    assert!(lost_on(ordinal + 1).is_none());
    let e = device_error(ordinal, code, format!("creating a context on device {ordinal}"));
    let Error::KernelFailed { kernel, config, panic, during, .. } = &e else { panic!("{e:?}") };
    assert_eq!(kernel.as_deref(), Some("checked_read"));
    assert_eq!(*config, Some(LaunchConfig::new(1, 64)));
    assert!(panic.as_deref().unwrap().contains("checks.rs:10:5"));
    assert_eq!(during.as_deref(), Some("creating a context on device 1000001"));
    let msg = e.to_string();
    assert!(
        msg.starts_with(
            "creating a context on device 1000001 failed: the CUDA context was lost when kernel `checked_read` \
             (grid 1 x block 64) failed; panicked at src/checks.rs:10:5 in block (0,0,0) thread (9,0,0)"
        ),
        "{msg}"
    );
    assert!(msg.contains("restart the process"), "{msg}");
}
