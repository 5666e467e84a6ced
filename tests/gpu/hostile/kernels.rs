//! Macro-generated and generic kernels, closures in collectives.

use super::*;

pub(super) fn macro_kernels(c: &Ctx) -> TestResult {
    let mut r = rng("hostile_macro_kernels");
    let (blocks, block) = (c.pick(96usize, 6), 256usize);
    let n = blocks * block;
    let vals: Vec<u32> = (0..n).map(|_| r.random()).collect();
    let d = c.gpu.upload(&vals).ctx("upload")?;
    let a = k::macro_a::hostile_macro_a::load(&c.tests).ctx("load a")?;
    let b = k::macro_b::hostile_macro_b::load(&c.tests).ctx("load b")?;
    let (s1, s2) = (c.gpu.new_stream().ctx("stream")?, c.gpu.new_stream().ctx("stream")?);
    let mut out_a = c.gpu.upload(&vec![u32::MAX; n]).ctx("alloc")?;
    let mut out_b = c.gpu.upload(&vec![u32::MAX; n]).ctx("alloc")?;
    // Both at once on two streams: their shared arrays and collectives are their own.
    for _ in 0..3 {
        a.launch(&s1, LaunchConfig::new(blocks as u32, block as u32), &d, &mut out_a).ctx("launch a")?;
        b.launch(&s2, LaunchConfig::new(blocks as u32, block as u32), &d, &mut out_b).ctx("launch b")?;
    }
    let want = |extra: u32| -> Vec<u32> {
        (0..n)
            .map(|i| {
                let (base, t) = (i / block * block, i % block);
                let right = vals[base + (t + 1) % block];
                let tile = i / 32 * 32;
                let sum = vals[tile..tile + 32].iter().fold(0u32, |s, v| s.wrapping_add(*v));
                right.wrapping_add(sum).wrapping_add(extra)
            })
            .collect()
    };
    check_all("macro_a", &out_a.to_vec().ctx("read")?, &want(0))?;
    check_all("macro_b", &out_b.to_vec().ctx("read")?, &want(1_000_000))
}

pub(super) fn generic_instances(c: &Ctx) -> TestResult {
    let mut r = rng("hostile_generic_instances");
    let n = c.pick(100_000usize, 5000);
    let (au, bu): (Vec<u32>, Vec<u32>) = (0..n).map(|_| (r.random::<u32>(), r.random::<u32>())).unzip();
    let (af, bf): (Vec<f32>, Vec<f32>) =
        (0..n).map(|_| (r.random_range(-1e3f32..1e3), r.random_range(-1e3f32..1e3))).unzip();
    let ku = k::hostile_generic_add::<u32>::load(&c.tests).ctx("load u32")?;
    let kf = k::hostile_generic_add::<f32>::load(&c.tests).ctx("load f32")?;
    ensure(ku.function().name() != kf.function().name(), || "two instances share an entry".into())?;
    let s = c.gpu.new_stream().ctx("stream")?;
    let (da, db) = (c.gpu.upload(&au).ctx("upload")?, c.gpu.upload(&bu).ctx("upload")?);
    let (fa, fb) = (c.gpu.upload(&af).ctx("upload")?, c.gpu.upload(&bf).ctx("upload")?);
    let mut ou = c.gpu.upload(&vec![u32::MAX; n]).ctx("alloc")?;
    let mut of = c.gpu.upload(&vec![f32::NAN; n]).ctx("alloc")?;
    let cfg = LaunchConfig::for_elements(n, 256);
    ku.launch(&s, cfg, &da, &db, &mut ou).ctx("launch u32")?;
    kf.launch(&s, cfg, &fa, &fb, &mut of).ctx("launch f32")?;
    let want_u: Vec<u32> = au.iter().zip(&bu).map(|(a, b)| a.wrapping_add(*b)).collect();
    let want_f: Vec<u32> = af.iter().zip(&bf).map(|(a, b)| (a + b).to_bits()).collect();
    check_all("u32 instance: wrapping sums", &ou.to_vec().ctx("read")?, &want_u)?;
    let got_f: Vec<u32> = of.to_vec().ctx("read")?.iter().map(|v| v.to_bits()).collect();
    check_all("f32 instance: IEEE sums, bit for bit", &got_f, &want_f)
}

pub(super) fn closure_collectives(c: &Ctx) -> TestResult {
    let mut r = rng("hostile_closure_collectives");
    let (blocks, block) = (c.pick(64usize, 4), 256usize);
    let n = blocks * block;
    let vals: Vec<u32> = (0..n).map(|_| r.random()).collect();
    let bias: u32 = r.random();
    let kern = k::hostile_closure_collectives::load(&c.tests).ctx("load")?;
    let s = c.gpu.new_stream().ctx("stream")?;
    let d = c.gpu.upload(&vals).ctx("upload")?;
    let mut red = c.gpu.upload(&vec![0u32; n]).ctx("alloc")?;
    let mut bred = c.gpu.upload(&vec![0u32; n]).ctx("alloc")?;
    let mut scan = c.gpu.upload(&vec![0u32; n]).ctx("alloc")?;
    kern.launch(&s, LaunchConfig::new(blocks as u32, block as u32), &d, bias, &mut red, &mut bred, &mut scan)
        .ctx("launch")?;
    let sum = |r: std::ops::Range<usize>| vals[r].iter().fold(0u32, |s, v| s.wrapping_add(*v));
    let want_red: Vec<u32> =
        (0..n).map(|i| sum(i / 32 * 32..i / 32 * 32 + 32).wrapping_add(31u32.wrapping_mul(bias))).collect();
    let want_bred: Vec<u32> = (0..n)
        .map(|i| sum(i / block * block..i / block * block + block).wrapping_add((block as u32 - 1).wrapping_mul(bias)))
        .collect();
    let want_scan: Vec<u32> =
        (0..n).map(|i| sum(i / 32 * 32..i + 1).wrapping_add(((i % 32) as u32).wrapping_mul(bias))).collect();
    check_all("tile reduce with a closure reading shared memory and voting", &red.to_vec().ctx("read")?, &want_red)?;
    check_all("block reduce with a closure reading shared memory", &bred.to_vec().ctx("read")?, &want_bred)?;
    check_all("tile scan with a closure reading shared memory", &scan.to_vec().ctx("read")?, &want_scan)
}
