//! `cohort::shared`: static and dynamic shared memory of many element types, shared atomics,
//! and `memcpy_async` through every chunk width, from global memory only.

use cohort_runtime::{Error, Gpu, LaunchConfig};
use cohort_test_kernels::cg_collectives::S24;
use cohort_test_kernels::shared_mem::{self as k, Pack, V4, copy_source};
use cohort_tests::{Context, Ctx, TestResult, check_all, ensure, gpu_trial, rng};
use libtest_mimic::Trial;
use rand::Rng;
use rand::rngs::StdRng;

pub fn trials() -> Vec<Trial> {
    vec![
        gpu_trial("shared_dynamic_every_type", dynamic_types),
        gpu_trial("shared_static_every_type", static_types),
        gpu_trial("shared_dynamic_length", dynamic_length),
        gpu_trial("shared_atomic_histogram", histogram),
        gpu_trial("shared_memcpy_async_every_alignment", memcpy_offsets),
        gpu_trial("shared_memcpy_async_words", memcpy_words),
        gpu_trial("shared_memcpy_async_from_local_or_constant_is_an_err", memcpy_not_global),
    ]
}

/// `memcpy_async` from a kernel parameter copies; from the thread's own array (local memory)
/// or a `constant!` (constant memory), which `cp.async` cannot read, the launch is an `Err`
/// naming `memcpy_async` and its call site, not a `CUDA_ERROR_INVALID_ADDRESS_SPACE` fault. On a
/// GPU the panic traps, which ends the CUDA context, so each refused case runs in a child
/// process with a context of its own ([`memcpy_child`]); on the CPU device, in this one.
fn memcpy_not_global(c: &Ctx) -> TestResult {
    let words: Vec<u32> = (0..64u32).map(|i| i.wrapping_mul(0x0101_0101) ^ 0xa5a5_5a5a).collect();
    memcpy_from_parameter(&c.gpu, &c.tests, &words)?;
    for which in ["memcpy-local", "memcpy-constant"] {
        if c.is_cpu() {
            memcpy_refused(&c.gpu, &c.tests, which)?;
            // Not sticky: the device copies right after.
            memcpy_from_parameter(&c.gpu, &c.tests, &words).ctx("the CPU device right after the panic")?;
        } else {
            let text = crate::launch::run_child(which)?;
            ensure(text.contains("ERROR AS RETURNED"), || {
                format!("child `{which}` did not report the error:\n{text}")
            })?;
        }
    }
    Ok(())
}

fn memcpy_from_parameter(gpu: &Gpu, tests: &cohort_runtime::Module, words: &[u32]) -> TestResult {
    let s = gpu.new_stream().ctx("stream")?;
    let dw = gpu.upload(words).ctx("upload")?;
    let mut out = gpu.upload(&[u32::MAX; 128]).ctx("alloc")?;
    k::memcpy_from::load(tests)
        .ctx("load")?
        .launch(&s, LaunchConfig::new(2, 64), copy_source::PARAMETER, &dw, &mut out)
        .ctx("launch from a parameter")?;
    let want: Vec<u32> = (0..128).map(|i| words[i % 64]).collect();
    check_all("copied from a kernel parameter", &out.to_vec().ctx("read")?, &want)
}

/// Launches `memcpy_from` with a source `cp.async` cannot read (`which`: `memcpy-local` or
/// `memcpy-constant`) and checks the error: the launch's `Err` (or the next synchronize's)
/// names the kernel, `memcpy_async`, the call site in `shared_mem.rs`, block and thread.
fn memcpy_refused(gpu: &Gpu, tests: &cohort_runtime::Module, which: &str) -> TestResult {
    let source = if which == "memcpy-local" { copy_source::LOCAL } else { copy_source::CONSTANT };
    let s = gpu.new_stream().ctx("stream")?;
    let dw = gpu.upload(&[1u32; 64]).ctx("upload")?;
    let mut out = gpu.zeroed::<u32>(64).ctx("alloc")?;
    let kern = k::memcpy_from::load(tests).ctx("load")?;
    let r = kern.launch(&s, LaunchConfig::new(1, 64), source, &dw, &mut out).and_then(|()| s.synchronize());
    let e = r.err().ok_or_else(|| format!("{which}: memcpy_async from outside global memory did not fail"))?;
    let msg = e.to_string();
    println!("ERROR AS RETURNED ({which}): {msg}");
    ensure(matches!(e, Error::CpuKernel { .. } | Error::KernelFailed { .. }), || {
        format!("{which}: expected CpuKernel or KernelFailed, got {e:?}")
    })?;
    for needle in ["memcpy_from", "memcpy_async", "not in global memory", "shared_mem.rs:", "block (0,0,0)", "thread ("]
    {
        ensure(msg.contains(needle), || format!("{which}: the error does not mention `{needle}`: {msg}"))?;
    }
    Ok(())
}

/// A refused `memcpy_async` in a context of its own (a GPU trap ends the context); for
/// `cohort_tests`' child scenarios.
pub fn memcpy_child(which: &str) -> Result<(), String> {
    let gpu = Gpu::isolated_from_env().ctx("isolated context")?;
    let tests = gpu.load(&cohort_test_kernels::PTX).ctx("load")?;
    memcpy_refused(&gpu, &tests, which)
}

fn mirrored<T: Copy>(v: &[T], block: usize) -> Vec<T> {
    (0..v.len()).map(|i| v[i / block * block + (block - 1 - i % block)]).collect()
}

macro_rules! dyn_case {
    ($c:ident, $s:ident, $r:ident, $t:ty, $gen:expr) => {{
        let (blocks, block) = (3usize, 256usize);
        let vals: Vec<$t> = (0..blocks * block).map(|_| $gen(&mut $r)).collect();
        let dv = $c.gpu.upload(&vals).ctx("upload")?;
        let mut out = $c.gpu.upload(&vec![vals[1]; blocks * block]).ctx("alloc")?;
        let cfg = LaunchConfig::new(blocks as u32, block as u32).with_shared_mem((block * size_of::<$t>()) as u32);
        k::shared_reverse::<$t>::load(&$c.tests).ctx("load")?.launch(&$s, cfg, &dv, &mut out).ctx("launch")?;
        check_all(
            concat!("mirrored through dynamic shared memory: ", stringify!($t)),
            &out.to_vec().ctx("read")?,
            &mirrored(&vals, block),
        )?;
    }};
}

fn v4(r: &mut StdRng) -> V4 {
    V4 { x: r.random(), y: r.random(), z: r.random(), w: r.random() }
}

fn s24(r: &mut StdRng) -> S24 {
    S24 { a: r.random(), b: r.random(), c: r.random() }
}

fn dynamic_types(c: &Ctx) -> TestResult {
    let mut r = rng("shared_dynamic_every_type");
    let s = c.gpu.new_stream().ctx("stream")?;
    dyn_case!(c, s, r, u8, |r: &mut StdRng| r.random::<u8>());
    dyn_case!(c, s, r, u16, |r: &mut StdRng| r.random::<u16>());
    dyn_case!(c, s, r, u64, |r: &mut StdRng| r.random::<u64>());
    dyn_case!(c, s, r, f64, |r: &mut StdRng| r.random::<f64>());
    dyn_case!(c, s, r, [u32; 3], |r: &mut StdRng| [r.random(), r.random(), r.random()]);
    dyn_case!(c, s, r, S24, s24);
    dyn_case!(c, s, r, V4, v4);
    Ok(())
}

fn static_types(c: &Ctx) -> TestResult {
    let mut r = rng("shared_static_every_type");
    let (blocks, block) = (2usize, 256usize);
    let n = blocks * block;
    let a: Vec<u8> = (0..n).map(|_| r.random()).collect();
    let b: Vec<u16> = (0..n).map(|_| r.random()).collect();
    let cc: Vec<u64> = (0..n).map(|_| r.random()).collect();
    let d: Vec<f64> = (0..n).map(|_| r.random()).collect();
    let e: Vec<[u32; 3]> = (0..n).map(|_| [r.random(), r.random(), r.random()]).collect();
    let f: Vec<S24> = (0..n).map(|_| s24(&mut r)).collect();
    let g: Vec<V4> = (0..n).map(|_| v4(&mut r)).collect();
    let s = c.gpu.new_stream().ctx("stream")?;
    let up = |x| x;
    let (da, db, dc, dd, de, df, dg) = (
        up(c.gpu.upload(&a).ctx("upload")?),
        c.gpu.upload(&b).ctx("upload")?,
        c.gpu.upload(&cc).ctx("upload")?,
        c.gpu.upload(&d).ctx("upload")?,
        c.gpu.upload(&e).ctx("upload")?,
        c.gpu.upload(&f).ctx("upload")?,
        c.gpu.upload(&g).ctx("upload")?,
    );
    let mut out = c.gpu.upload(&vec![Pack::default(); n]).ctx("alloc")?;
    k::static_reverse::load(&c.tests)
        .ctx("load")?
        .launch(&s, (blocks as u32, block as u32), &da, &db, &dc, &dd, &de, &df, &dg, &mut out)
        .ctx("launch")?;
    let m = |i: usize| i / block * block + (block - 1 - i % block);
    let want: Vec<Pack> = (0..n)
        .map(|i| Pack {
            a: a[m(i)] as u64,
            b: b[m(i)] as u64,
            c: cc[m(i)],
            d: d[m(i)],
            e: e[m(i)],
            pad: 0,
            f: f[m(i)],
            pad2: [0; 2],
            g: g[m(i)],
        })
        .collect();
    check_all("mirrored through static shared arrays", &out.to_vec().ctx("read")?, &want)
}

fn dynamic_length(c: &Ctx) -> TestResult {
    let mut r = rng("shared_dynamic_length");
    let (blocks, block) = (4usize, 128usize);
    let vals: Vec<u32> = (0..blocks * block).map(|_| r.random()).collect();
    let s = c.gpu.new_stream().ctx("stream")?;
    let dv = c.gpu.upload(&vals).ctx("upload")?;
    let mut out = c.gpu.zeroed::<u32>(blocks * block).ctx("alloc")?;
    let mut lens = c.gpu.zeroed::<u32>(blocks).ctx("alloc")?;
    let bytes = 70_000u32; // more than 48 KiB: the launch raises the kernel's limit
    k::dynamic_reverse::load(&c.tests)
        .ctx("load")?
        .launch(&s, LaunchConfig::new(blocks as u32, block as u32).with_shared_mem(bytes), &dv, &mut out, &mut lens)
        .ctx("launch")?;
    check_all("mirrored", &out.to_vec().ctx("read")?, &mirrored(&vals, block))?;
    check_all("dynamic length as seen by the kernel", &lens.to_vec().ctx("read")?, &vec![bytes / 4; blocks])
}

fn histogram(c: &Ctx) -> TestResult {
    let mut r = rng("shared_atomic_histogram");
    let n = 1_000_003;
    let vals: Vec<u32> = (0..n).map(|_| r.random()).collect();
    let s = c.gpu.new_stream().ctx("stream")?;
    let dv = c.gpu.upload(&vals).ctx("upload")?;
    let mut counts = c.gpu.zeroed::<u32>(64).ctx("alloc")?;
    k::shared_histogram::load(&c.tests).ctx("load")?.launch(&s, (50u32, 256u32), &dv, &mut counts).ctx("launch")?;
    let mut want = vec![0u32; 64];
    for v in &vals {
        want[(v % 64) as usize] += 1;
    }
    check_all("histogram bins", &counts.to_vec().ctx("read")?, &want)
}

fn memcpy_offsets(c: &Ctx) -> TestResult {
    let mut r = rng("shared_memcpy_offsets");
    let bytes: Vec<u8> = (0..8192).map(|_| r.random()).collect();
    let s = c.gpu.new_stream().ctx("stream")?;
    let db = c.gpu.upload(&bytes).ctx("upload")?;
    let kern = k::memcpy_offsets::load(&c.tests).ctx("load")?;
    // 16-, 8-, 4-byte chunks and the byte fallback.
    for (offset, len) in [(0u32, 4096u32), (8, 4000), (4, 4092), (1, 4001), (3, 17)] {
        let mut out = c.gpu.upload(&vec![0u8; 2 * 4096]).ctx("alloc")?;
        kern.launch(&s, (2u32, 96u32), &db, offset, len, &mut out).ctx("launch")?;
        let got = out.to_vec().ctx("read")?;
        let src = &bytes[offset as usize..(offset + len) as usize];
        for b in 0..2 {
            check_all(
                &format!("offset {offset}, {len} bytes, block {b}"),
                &got[b * 4096..b * 4096 + len as usize],
                src,
            )?;
        }
    }
    Ok(())
}

fn memcpy_words(c: &Ctx) -> TestResult {
    let mut r = rng("shared_memcpy_words");
    let words: Vec<u32> = (0..3000).map(|_| r.random()).collect();
    let s = c.gpu.new_stream().ctx("stream")?;
    let dw = c.gpu.upload(&words).ctx("upload")?;
    let kern = k::memcpy_words::load(&c.tests).ctx("load")?;
    for (offset, len) in [(0u32, 2048u32), (1, 2047), (2, 1000)] {
        let mut out = c.gpu.zeroed::<u32>(len as usize).ctx("alloc")?;
        kern.launch(&s, LaunchConfig::new(1, 128).with_shared_mem(len * 4), &dw, offset, len, &mut out)
            .ctx("launch")?;
        check_all(
            &format!("words {offset}..{}", offset + len),
            &out.to_vec().ctx("read")?,
            &words[offset as usize..(offset + len) as usize],
        )?;
    }
    Ok(())
}
