//! The `cohort` binary as a command-line tool (no GPU needed).

use std::io::Read;
use std::process::{Command, Stdio};

/// The `cohort` binary: cargo's, or `COHORT_BIN` where the tests run away from the build (the
/// GPU bundle's `run` script sets it to the bundled binary).
fn cohort() -> std::ffi::OsString {
    std::env::var_os("COHORT_BIN").unwrap_or_else(|| env!("CARGO_BIN_EXE_cohort").into())
}

/// `cohort … | head`: when the reader goes away, `cohort` ends quietly (SIGPIPE's default
/// action, as `cat` does), not with a panic about a broken pipe.
#[test]
fn a_closed_pipe_ends_quietly() {
    let mut child = Command::new(cohort())
        .args(["ptx", "--module", "sgemm_128x128"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("cohort runs");
    let mut stdout = child.stdout.take().expect("piped");
    let mut first = [0u8; 64];
    stdout.read_exact(&mut first).expect("cohort prints the PTX");
    drop(stdout);
    let out = child.wait_with_output().expect("cohort ends");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        // Killed by SIGPIPE once it wrote into the closed pipe.
        assert_eq!(out.status.signal(), Some(libc::SIGPIPE), "{:?}: {stderr}", out.status);
    }
}
