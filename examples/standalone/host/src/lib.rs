//! What the numbered examples (`examples/`) share: where they run and how they end.

use std::error::Error;
use std::process::ExitCode;

use cohort_runtime::Gpu;

/// An example's result: any error, with a message for the user.
pub type Result<T = ()> = std::result::Result<T, Box<dyn Error>>;

/// The device the examples run on, said on the first line: a GPU if there is one
/// (`COHORT_DEVICE=<ordinal>` picks it), else the CPU device (kernels on this machine's cores,
/// with the same API and checks). `COHORT_DEVICE=cpu` asks for the CPU device, `COHORT_DEVICE=gpu`
/// for a GPU only.
pub fn device() -> Result<Gpu> {
    let (gpu, cpu_line) = Gpu::any_noted()?;
    match cpu_line {
        Some(line) => println!("{line}"),
        None => println!("GPU: {}", gpu.info().name),
    }
    Ok(gpu)
}

/// The exit status of an example: 0 when it ran and its check passed; 2, after saying so, when
/// a GPU was asked for (`COHORT_DEVICE=gpu`) and there is none; 1 for any other error.
pub fn exit_code(result: Result) -> ExitCode {
    let Err(e) = result else { return ExitCode::SUCCESS };
    match e.downcast_ref::<cohort_runtime::Error>() {
        Some(cohort_runtime::Error::NoDriver | cohort_runtime::Error::NoDevice { .. }) => {
            eprintln!("no GPU: {e}");
            ExitCode::from(2)
        }
        _ => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

/// `Ok` if `got` and `want` agree element for element (by `same`), else an error naming the
/// first difference and how many there are.
pub fn check<T: std::fmt::Debug>(what: &str, got: &[T], want: &[T], same: impl Fn(&T, &T) -> bool) -> Result {
    if got.len() != want.len() {
        return Err(format!("{what}: {} results, expected {}", got.len(), want.len()).into());
    }
    let bad: Vec<usize> = (0..got.len()).filter(|&i| !same(&got[i], &want[i])).collect();
    match bad.first() {
        None => Ok(()),
        Some(&i) => Err(format!(
            "{what}: {} of {} differ from the CPU; first at {i}: got {:?}, expected {:?}",
            bad.len(),
            got.len(),
            got[i],
            want[i]
        )
        .into()),
    }
}
