//! The safety rules: a launcher whose declaration differs from its entry is refused at `load`
//! (never launched), zero-sized elements, vector types and casts, phases of a cooperative
//! kernel, each checked against a CPU reference. (The one-writer outputs are `slice.rs`'s.)

use cohort_runtime::{Error, LaunchConfig};
use cohort_test_kernels::safety as k;
use cohort_tests::{Context, Ctx, TestResult, check_all, ensure, gpu_trial, rng};
use libtest_mimic::Trial;
use rand::Rng;

pub fn trials() -> Vec<Trial> {
    vec![
        gpu_trial("safety_abi_skew_is_refused_at_load", abi_skew),
        gpu_trial("safety_zero_sized_elements", zero_sized),
        gpu_trial("safety_vector_types_and_cast", vectors),
        gpu_trial("safety_grid_phases_publish_reclaim", phases),
    ]
}

fn abi_skew(c: &Ctx) -> TestResult {
    let cases: [(&str, Result<(), Error>, &str); 3] = [
        ("abi_skew", k::abi_skew::load(&c.tests).map(drop), "PTX parameter 0"),
        ("abi_skew_coop", k::abi_skew_coop::load(&c.tests).map(drop), "uses grid sync"),
        ("abi_skew_elem", k::abi_skew_elem::load(&c.tests).map(drop), "4-byte elements"),
    ];
    for (name, r, want) in cases {
        match r {
            Ok(()) => return Err(format!("`{name}`: loaded a launcher that does not match its entry")),
            Err(e @ Error::AbiMismatch { .. }) => {
                let msg = e.to_string();
                ensure(msg.contains(name) && msg.contains(want), || format!("`{name}`: {msg}"))?;
                eprintln!("refused as it must be: {msg}");
            }
            Err(e) => return Err(format!("`{name}`: expected an ABI mismatch, got: {e}")),
        }
    }
    Ok(())
}

fn zero_sized(c: &Ctx) -> TestResult {
    let kern = k::zero_sized_elements::load(&c.tests).ctx("load")?;
    let s = c.gpu.new_stream().ctx("stream")?;
    for n in [0usize, 1, 1000] {
        let units = c.gpu.upload(&vec![(); n]).ctx("upload")?;
        let mut out = c.gpu.upload(&vec![u64::MAX; 64]).ctx("alloc")?;
        kern.launch(&s, LaunchConfig::for_elements(64, 64), &units, &mut out).ctx("launch")?;
        check_all(
            &format!("{n} zero-sized elements seen by every thread"),
            &out.to_vec().ctx("read")?,
            &vec![2 * n as u64; 64],
        )?;
    }
    Ok(())
}

fn vectors(c: &Ctx) -> TestResult {
    use cohort::vec::{f32x4, u32x4};
    let mut r = rng("safety_vectors");
    let kern = k::vectors::load(&c.tests).ctx("load")?;
    let s = c.gpu.new_stream().ctx("stream")?;
    let quads = 4099usize;
    let src: Vec<f32> = (0..4 * quads).map(|_| r.random_range(-8.0f32..8.0)).collect();
    let words: Vec<u32x4> = (0..quads).map(|_| u32x4::new(r.random(), r.random(), r.random(), r.random())).collect();
    // The words go up as plain `u32`s and are viewed as `u32x4` on the host (`cast`).
    let flat: Vec<u32> = words.iter().flat_map(|w| w.to_array()).collect();
    let ds = c.gpu.upload(&src).ctx("upload")?;
    let dw = c.gpu.upload(&flat).ctx("upload")?.cast::<u32x4>().map_err(|_| "cast to u32x4 refused")?;
    let odd = c.gpu.upload(&flat[..7]).ctx("upload")?;
    ensure(odd.cast::<u32x4>().is_err(), || "7 words were cast to u32x4".into())?;
    ensure(dw.slice(1..).cast::<u64>().is_some() && dw.slice(..).cast::<[u8; 3]>().is_none(), || "view casts".into())?;
    let mut out = c.gpu.upload(&vec![f32x4::new(f32::NAN, 0.0, 0.0, 0.0); quads]).ctx("alloc")?;
    let mut sums = c.gpu.upload(&vec![u32::MAX; quads]).ctx("alloc")?;
    kern.launch(&s, LaunchConfig::for_elements(quads, 256), &ds, &dw, &mut out, &mut sums).ctx("launch")?;
    let want: Vec<f32x4> = src.chunks(4).map(|q| f32x4::new(2.0 * q[0], 3.0 * q[1], 4.0 * q[2], 5.0 * q[3])).collect();
    check_all("f32x4 through slice::cast", &out.to_vec().ctx("read")?, &want)?;
    let want: Vec<u32> = words.iter().map(|w| w.x.wrapping_add(w.y).wrapping_add(w.z).wrapping_add(w.w)).collect();
    check_all("u32x4 parameter", &sums.to_vec().ctx("read")?, &want)
}

fn phases(c: &Ctx) -> TestResult {
    let mut r = rng("safety_phases");
    let kern = k::phases::load(&c.tests).ctx("load")?;
    let s = c.gpu.new_stream().ctx("stream")?;
    let full = kern.function().persistent_config(256, 0).ctx("config")?;
    let n = (full.grid.x * 256) as usize;
    let vals: Vec<u32> = (0..n).map(|_| r.random()).collect();
    let d = c.gpu.upload(&vals).ctx("upload")?;
    let mut x = cohort_runtime::GridVecBuffer::<u32>::zeroed(&c.gpu, n).ctx("alloc")?;
    let mut seen = c.gpu.upload(&vec![[u32::MAX; 2]; n]).ctx("alloc")?;
    kern.launch_cooperative(&s, full, &d, &mut x, &mut seen).ctx("launch")?;
    let right = |i: usize| vals[(i + 1) % n];
    let want: Vec<[u32; 2]> = (0..n).map(|i| [right(i), right((i + n - 1) % n).wrapping_mul(2)]).collect();
    check_all(&format!("{} blocks: neighbours across two grid phases", full.grid.x), &seen.to_vec().ctx("read")?, &want)
}
