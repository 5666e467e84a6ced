//! The runtime's module variables (`symbol`: `Module::constant`, `Module::global`): a host
//! write never lands under a kernel that reads the variable, a host read waits for the kernels
//! that update it, and a wrong size or a missing name is refused. (The `globals_*` names are
//! kept.)

use cohort_test_kernels::globals as k;
use cohort_tests::{Context, Ctx, TestResult, check_all, ensure, gpu_trial, rng};
use libtest_mimic::Trial;
use rand::Rng;

use super::globals::{SLOW_NS, cfg, horner, non_blocking, own_module};

pub fn trials() -> Vec<Trial> {
    vec![
        gpu_trial("globals_set_waits_for_kernels_on_other_streams", ordering),
        gpu_trial("globals_wrong_size_or_missing_name_is_refused", refused),
    ]
}

/// The races the safe API must prevent: a host write on stream 2 while a kernel on stream 1
/// still reads the variable, and a host read while a kernel on another stream still counts.
fn ordering(c: &Ctx) -> TestResult {
    let mut r = rng("globals_set_waits_for_kernels_on_other_streams");
    let m = own_module(c)?;
    let (s1, s2) = (non_blocking(c)?, non_blocking(c)?);
    let n = 1 << 16;
    let x: Vec<f32> = (0..n).map(|_| r.random_range(-2.0f32..2.0)).collect();
    let dx = c.gpu.upload(&x).ctx("upload")?;
    let mut out = c.gpu.zeroed::<f32>(n).ctx("alloc")?;
    let poly = k::poly_eval::load(&m).ctx("load")?;
    let sym = m.constant(&k::POLY).ctx("constant POLY")?;
    // The CPU device runs each launch before it returns (so nothing can overtake it), and
    // every thread's sleep there costs the host's time: a short one keeps the test quick.
    let slow = c.pick(SLOW_NS, 100_000);
    for round in 0..3 {
        let a: [f32; 8] = std::array::from_fn(|_| r.random_range(-1.0f32..1.0));
        let b: [f32; 8] = std::array::from_fn(|_| r.random_range(-1.0f32..1.0));
        sym.set(&s1, &a).ctx("set A")?;
        // Sleeps first, then reads the coefficients: set B on stream 2 must wait for it.
        poly.launch(&s1, cfg(n), &dx, slow, &mut out).ctx("slow launch")?;
        sym.set(&s2, &b).ctx("set B")?;
        let want: Vec<f32> = x.iter().map(|&v| horner(&a, v)).collect();
        check_all(
            &format!("round {round}: the slow kernel saw A, not B set later on stream 2"),
            &out.to_vec().ctx("read")?,
            &want,
        )?;
        // And a launch on stream 1 after set B on stream 2 sees B.
        poly.launch(&s1, cfg(n), &dx, 0, &mut out).ctx("launch")?;
        let want: Vec<f32> = x.iter().map(|&v| horner(&b, v)).collect();
        check_all(&format!("round {round}: the next kernel saw B"), &out.to_vec().ctx("read")?, &want)?;
    }
    // `get` waits for a slow counting kernel on another stream.
    let count = k::count_above::load(&m).ctx("load")?;
    let above = m.global(&k::ABOVE).ctx("global ABOVE")?;
    above.set(&s2, &0).ctx("set")?;
    count.launch(&s1, cfg(n), &dx, 0.0, slow).ctx("slow launch")?;
    let got = above.get().ctx("get")?;
    let want = x.iter().filter(|&&v| v > 0.0).count() as u32;
    ensure(got == want, || format!("ABOVE = {got} read while the kernel may still count; want {want}"))
}

fn refused(c: &Ctx) -> TestResult {
    // A handle whose type disagrees with the module's variable (as after host/device skew).
    cohort::constant! { static POLY: [f32; 4] = [0.0; 4]; }
    cohort::global! { static NOT_IN_THE_MODULE: u32 = 0; }
    let m = own_module(c)?;
    let e = m.constant(&POLY).err().ok_or("a [f32; 4] handle on the 32-byte POLY was accepted")?;
    ensure(e.to_string().contains("32 B"), || format!("the error names the sizes: {e}"))?;
    let e = m.global(&NOT_IN_THE_MODULE).err().ok_or("a global the module lacks was found")?;
    ensure(e.to_string().contains("NOT_IN_THE_MODULE"), || format!("the error names the global: {e}"))?;
    // A constant is not a global, nor the other way round.
    ensure(m.global(&k::SEVEN).is_ok() && m.constant(&k::AFFINE).is_ok(), || "lookups".into())
}
