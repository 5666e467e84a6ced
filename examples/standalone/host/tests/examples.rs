//! Runs every numbered example as a user would (`cargo test` builds them first) and checks how
//! it ends: each must exit 0 (its result matched the CPU's) — on a GPU, or without one on the
//! CPU device, saying so on its first line; with `COHORT_DEVICE=cpu` on the CPU device even
//! where there is a GPU; and with `COHORT_DEVICE=gpu` where there is none, exit 2 saying
//! "no GPU" (the test for the case this machine is not in reports itself ignored, with the
//! reason). A GPU-only example ([`GPU_ONLY`]) says so on its first line instead of running on
//! the CPU device, and exits 0.

use std::path::PathBuf;
use std::process::Command;

use cohort_runtime::Gpu;
use libtest_mimic::{Arguments, Completion, Failed, Trial};

/// The examples, in order; `examples_are_all_listed` checks this against `examples/`.
const EXAMPLES: &[&str] = &[
    "01_vector_add",
    "02_transpose",
    "03_block_reduce",
    "04_warp_shuffle",
    "05_atomics_mutex",
    "06_grid_sync",
    "07_streams",
    "08_device_launch",
    "09_cudarc",
];

/// The examples that run only on a GPU (cudarc needs a driver): where they would run on the CPU
/// device they print this on their first line and exit 0.
const GPU_ONLY: &[(&str, &str)] = &[("09_cudarc", "GPU-only example")];

fn main() {
    let args = Arguments::from_args();
    let gpu_here = matches!(Gpu::count(), Ok(n) if n > 0);
    let mut trials = vec![Trial::test("examples_are_all_listed", all_listed)];
    for &name in EXAMPLES {
        let gpu_only = GPU_ONLY.iter().find(|(n, _)| *n == name).map(|(_, line)| *line);
        // No COHORT_DEVICE: a GPU if there is one, else the CPU device, which must say so.
        let expect = match (gpu_here, gpu_only) {
            (true, _) => "",
            (false, Some(line)) => line,
            (false, None) => "No GPU here: running on the CPU device",
        };
        trials.push(Trial::test(format!("{name}_runs"), move || run(name, None, 0, expect)));
        let on_cpu = gpu_only.unwrap_or("Running on the CPU device");
        trials.push(Trial::test(format!("{name}_on_the_cpu_device"), move || run(name, Some("cpu"), 0, on_cpu)));
        trials.push(Trial::ignorable_test(format!("{name}_gpu_only_without_gpu_exits_2"), move || {
            if gpu_here {
                Ok(Completion::ignored_with("a GPU is here"))
            } else {
                run(name, Some("gpu"), 2, "no GPU").map(|()| Completion::Completed)
            }
        }));
    }
    libtest_mimic::run(&args, trials).exit();
}

/// The example's executable, which `cargo test` builds into `<target>/<profile>/examples/`; this
/// test runs from a directory below `<target>/<profile>/` (`deps/`, or `build/…/out/`).
fn executable(name: &str) -> Result<PathBuf, Failed> {
    let exe = std::env::current_exe().map_err(|e| format!("current_exe: {e}"))?;
    let file = format!("{name}{}", std::env::consts::EXE_SUFFIX);
    exe.ancestors().skip(1).take(5).map(|dir| dir.join("examples").join(&file)).find(|p| p.is_file()).ok_or_else(|| {
        format!("examples/{file} not found above {}: run `cargo test` (which builds the examples)", exe.display())
            .into()
    })
}

/// Runs example `name` with `COHORT_DEVICE` set to `device` (unset for `None`); it must exit with
/// `status` and print `expect` (on stdout or stderr).
fn run(name: &str, device: Option<&str>, status: i32, expect: &str) -> Result<(), Failed> {
    let mut cmd = Command::new(executable(name)?);
    match device {
        Some(d) => cmd.env("COHORT_DEVICE", d),
        None => cmd.env_remove("COHORT_DEVICE"),
    };
    let out = cmd.output().map_err(|e| format!("running {name}: {e}"))?;
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    if status == 0 {
        print!("{stdout}"); // the example's result line
    }
    if out.status.code() != Some(status) {
        return Err(format!("{name} exited with {}, expected {status}\n{stdout}{stderr}", out.status).into());
    }
    if !format!("{stdout}{stderr}").contains(expect) {
        return Err(format!("{name} did not print {expect:?}\n{stdout}{stderr}").into());
    }
    Ok(())
}

fn all_listed() -> Result<(), Failed> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("examples");
    let mut found: Vec<String> = std::fs::read_dir(&dir)
        .map_err(|e| format!("{}: {e}", dir.display()))?
        .filter_map(|e| e.ok()?.file_name().to_str()?.strip_suffix(".rs").map(String::from))
        .collect();
    found.sort();
    if found != EXAMPLES {
        return Err(format!("examples/ has {found:?}, this test lists {EXAMPLES:?}").into());
    }
    Ok(())
}
