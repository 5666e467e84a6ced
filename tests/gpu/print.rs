//! `cohort::printf!`: device output captured from stdout and compared line by line.

use cohort_kernels::tour;
use cohort_tests::{Context, Ctx, TestResult, ensure, gpu_trial, rng};
use libtest_mimic::Trial;
use rand::Rng;

pub fn trials() -> Vec<Trial> {
    vec![gpu_trial("print_printf_lines", printf_lines)]
}

fn printf_lines(c: &Ctx) -> TestResult {
    let mut r = rng("print_printf_lines");
    let lines = r.random_range(5u32..40);
    let tag = r.random_range(100..999) as f32 / 100.0;
    let k = tour::hello::load(&c.module).ctx("load")?;
    let s = c.gpu.new_stream().ctx("stream")?;
    let (res, text) = cohort_runtime::capture_stdout(|| {
        k.launch(&s, (2u32, 32u32), lines, tag)?;
        s.synchronize()
    })
    .ctx("capture")?;
    res.ctx("launch")?;
    // A line may follow other output of the process written meanwhile without a newline (fd 1
    // is the process's, see `capture_stdout`): take each kernel line from its "hello from".
    let mut got: Vec<&str> = text.lines().filter_map(|l| l.find("hello from").map(|i| &l[i..])).collect();
    got.sort_unstable();
    let mut want: Vec<String> =
        (0..lines).map(|i| format!("hello from thread {} of block {}: tag {tag:.2}, id {i}", i % 32, i / 32)).collect();
    want.sort_unstable();
    ensure(got == want, || format!("printf output:\n{}\nexpected:\n{}", got.join("\n"), want.join("\n")))
}
