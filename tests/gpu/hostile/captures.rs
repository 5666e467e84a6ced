//! Standard-output captures inside captures.

use super::*;

pub(super) fn capture_nested_child() -> Result<(), String> {
    let r = cohort_runtime::capture_stdout(|| cohort_runtime::capture_stdout(|| println!("inner")));
    match r {
        Ok((Err(e), _)) => {
            eprintln!("NESTED CAPTURE REFUSED: {e}");
            Ok(())
        }
        Ok((Ok(_), _)) => Err("a capture inside a capture succeeded".into()),
        Err(e) => Err(format!("the outer capture failed: {e}")),
    }
}

pub(super) fn nested_capture() -> TestResult {
    let (status, text) = run_child("capture-nested", Duration::from_secs(60))?;
    let Some(status) = status else {
        return Err(format!("capture_stdout inside capture_stdout hung (killed after 60 s):\n{text}"));
    };
    ensure(status.success() && text.contains("NESTED CAPTURE REFUSED"), || format!("child ({status}):\n{text}"))
}
