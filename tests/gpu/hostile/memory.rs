//! Memory exhaustion midway, sizes that overflow, zero lengths.

use super::*;

/// The operations that allocate, each asked for `bytes` bytes: each must be an `Err` (or, on a
/// GPU with room, `Ok`) and never abort the process.
pub(super) fn allocations(c: &Ctx, s: &Stream, pool: &MemPool, bytes: usize) -> Vec<(&'static str, Result<(), Error>)> {
    vec![
        ("Gpu::zeroed", c.gpu.zeroed::<u8>(bytes).map(drop)),
        ("Stream::alloc_zeroed", s.alloc_zeroed::<u8>(bytes).map(drop)),
        ("MemPool::alloc_zeroed", pool.alloc_zeroed::<u8>(s, bytes).map(drop)),
        ("ManagedBuffer::new", ManagedBuffer::<u8>::new(&c.gpu, bytes).map(drop)),
        ("Gpu::pinned", c.gpu.pinned::<u8>(bytes).map(drop)),
        ("AppendBuffer::new", AppendBuffer::<u8>::new(&c.gpu, bytes).map(drop)),
        ("GridVecBuffer::zeroed", GridVecBuffer::<u8>::zeroed(&c.gpu, bytes).map(drop)),
    ]
}

pub(super) fn out_of_memory(c: &Ctx) -> TestResult {
    let n = c.pick(1usize << 20, 1 << 12);
    let s1 = c.gpu.new_stream().ctx("stream")?;
    let s2 = c.gpu.new_stream().ctx("stream")?;
    let pool = MemPool::new(&c.gpu).ctx("pool")?;
    let fill = k::hostile_fill::load(&c.tests).ctx("load")?;
    let mut a = c.gpu.zeroed::<u32>(n).ctx("alloc")?;
    let mut b = pool.alloc_zeroed::<u32>(&s1, n).ctx("pool alloc")?;
    let used = pool.used_bytes().ctx("used")?;
    // Pending work on both buffers when the allocations fail.
    fill.launch(&s1, LaunchConfig::for_elements(n, 256), 1, &mut a).ctx("launch")?;
    fill.launch(&s2, LaunchConfig::for_elements(n, 256), 2, &mut b).ctx("launch")?;
    // More than any device has (1 PiB): refused everywhere, nothing half-made.
    for (what, r) in allocations(c, &s1, &pool, 1usize << 50) {
        match r {
            Err(e) => println!("{what} of 1 PiB: {e}"),
            Ok(()) => return Err(format!("{what} of 1 PiB succeeded")),
        }
    }
    ensure(pool.used_bytes().ctx("used")? == used, || "a refused pool allocation is counted as used".into())?;
    // On a GPU, also fill the memory for real, then work while nothing more fits.
    let mut hog = Vec::new();
    if !c.is_cpu() {
        while hog.len() < 1024 {
            match c.gpu.zeroed::<u8>(1 << 30) {
                Ok(h) => hog.push(h),
                Err(e) => {
                    println!("device full after {} GiB: {e}", hog.len());
                    break;
                }
            }
        }
        for (what, r) in allocations(c, &s1, &pool, 1 << 30) {
            println!("{what} of 1 GiB on a full device: {r:?}");
        }
    }
    // Whatever failed, the tracker orders the work on the live buffers across streams (on a
    // full device an operation may itself be refused: then it is tried again once memory is
    // back, and nothing it should have done may be missing).
    let copied = s2.copy(&a, &mut b);
    let launched = copied.as_ref().map_err(|_| ()).and_then(|()| {
        fill.launch(&s1, LaunchConfig::for_elements(n, 256), 3, &mut a)
            .map_err(|e| println!("launch on a full device: {e}"))
    });
    if let Err(e) = &copied {
        println!("copy across streams on a full device: {e}");
    }
    drop(hog);
    if copied.is_err() {
        s2.copy(&a, &mut b).ctx("copy across streams after freeing")?;
    }
    if launched.is_err() {
        fill.launch(&s1, LaunchConfig::for_elements(n, 256), 3, &mut a).ctx("launch after freeing")?;
    }
    let want_b: Vec<u32> = (0..n as u32).map(|i| 1 + i).collect();
    let want_a: Vec<u32> = (0..n as u32).map(|i| 3 + i).collect();
    check_all("b (copied from a across streams)", &b.to_vec().ctx("read b")?, &want_b)?;
    check_all("a", &a.to_vec().ctx("read a")?, &want_a)?;
    // And once memory is back, every allocation works.
    for (what, r) in allocations(c, &s1, &pool, 1 << 20) {
        r.map_err(|e| format!("{what} of 1 MiB after freeing: {e}"))?;
    }
    drop(b);
    s1.synchronize().ctx("synchronize")?;
    ensure(pool.used_bytes().ctx("used")? <= used, || "pool bytes leaked".into())
}

pub(super) fn overflowing_sizes(c: &Ctx) -> TestResult {
    let s = c.gpu.new_stream().ctx("stream")?;
    let pool = MemPool::new(&c.gpu).ctx("pool")?;
    let refused = |what: &str, r: Result<(), Error>| -> TestResult {
        match r {
            Err(e) => {
                println!("{what}: {e}");
                Ok(())
            }
            Ok(()) => Err(format!("{what} succeeded")),
        }
    };
    let huge = usize::MAX / 4 + 1;
    refused("zeroed::<u64>(usize::MAX / 4 + 1)", c.gpu.zeroed::<u64>(huge).map(drop))?;
    refused("upload of ZSTs is fine, pinned::<u64> is not", c.gpu.pinned::<u64>(huge).map(drop))?;
    refused("ManagedBuffer::<u64>::new", ManagedBuffer::<u64>::new(&c.gpu, huge).map(drop))?;
    refused("Stream::alloc_zeroed::<u64>", s.alloc_zeroed::<u64>(huge).map(drop))?;
    refused("MemPool::alloc_zeroed::<u64>", pool.alloc_zeroed::<u64>(&s, huge).map(drop))?;
    refused("AppendBuffer::<u64>::new", AppendBuffer::<u64>::new(&c.gpu, usize::MAX).map(drop))?;
    refused("GridVecBuffer::<u64>::zeroed", GridVecBuffer::<u64>::zeroed(&c.gpu, usize::MAX).map(drop))?;
    let mut small = c.gpu.zeroed::<u32>(64).ctx("alloc")?;
    refused("as_matrix(usize::MAX, 3)", small.as_matrix(usize::MAX, 3).map(drop))?;
    refused("as_matrix_mut(3, usize::MAX)", small.as_matrix_mut(3, usize::MAX).map(drop))?;
    // Launch shapes past every limit: errors before anything runs.
    let fill = k::hostile_fill::load(&c.tests).ctx("load")?;
    let shapes: [(&str, LaunchConfig); 6] = [
        ("grid of u32::MAX^3 blocks", LaunchConfig::new((u32::MAX, u32::MAX, u32::MAX), 1u32)),
        ("grid of 0 blocks", LaunchConfig::new(0u32, 64u32)),
        ("block of 0 threads", LaunchConfig::new(1u32, (0u32, 1u32, 1u32))),
        ("block of u32::MAX threads", LaunchConfig::new(1u32, u32::MAX)),
        ("u32::MAX bytes of dynamic shared memory", LaunchConfig::new(1u32, 64u32).with_shared_mem(u32::MAX)),
        ("for_elements(usize::MAX)", LaunchConfig::for_elements(usize::MAX, 256)),
    ];
    for (what, cfg) in shapes {
        let t = Instant::now();
        refused(what, fill.launch(&s, cfg, 0, &mut small))?;
        ensure(t.elapsed() < Duration::from_secs(5), || format!("{what}: refused only after {:?}", t.elapsed()))?;
    }
    // A slice longer than 2^32 elements reaches the kernel whole (zero-sized elements: no memory).
    let len = (1usize << 32) + 7;
    let units = c.gpu.upload(&vec![(); len]).ctx("upload units")?;
    let mut seen = c.gpu.zeroed::<u64>(64).ctx("alloc")?;
    k::hostile_lengths::load(&c.tests).ctx("load")?.launch(&s, (1u32, 64u32), &units, &mut seen).ctx("launch")?;
    check_all("length seen by the kernel", &seen.to_vec().ctx("read")?, &[len as u64; 64])
}

pub(super) fn zero_lengths(c: &Ctx) -> TestResult {
    let s = c.gpu.new_stream().ctx("stream")?;
    let fill = k::hostile_fill::load(&c.tests).ctx("load")?;
    // A zero-length output: every `set` is out of range, nothing written anywhere.
    let mut empty = c.gpu.zeroed::<u32>(0).ctx("alloc 0")?;
    fill.launch(&s, (4u32, 64u32), 1, &mut empty).ctx("launch into 0 elements")?;
    ensure(empty.to_vec().ctx("read")?.is_empty(), || "empty".into())?;
    // An empty view in the middle of a buffer: its neighbours untouched.
    let mut buf = c.gpu.upload(&[5u32; 16]).ctx("upload")?;
    fill.launch(&s, (1u32, 64u32), 1, buf.slice_mut(8..8)).ctx("launch into an empty view")?;
    check_all("neighbours of an empty view", &buf.to_vec().ctx("read")?, &[5u32; 16])?;
    // Copies and fills of nothing, casts of nothing.
    let mut other = c.gpu.zeroed::<u32>(0).ctx("alloc 0")?;
    s.copy(&empty, &mut other).ctx("copy 0 elements")?;
    s.fill(buf.slice_mut(3..3), 9u32).ctx("fill 0 elements")?;
    s.fill_bytes(&mut other, 0xff).ctx("fill_bytes 0 elements")?;
    ensure(empty.slice(..).cast::<u64>().is_some_and(|v| v.is_empty()), || "cast of nothing".into())?;
    let mut pinned = c.gpu.pinned::<u32>(0).ctx("pinned 0")?;
    s.copy(&empty, &mut pinned).ctx("copy into 0 pinned")?;
    ensure(pinned.as_slice().ctx("view")?.is_empty(), || "pinned".into())?;
    let mut managed = ManagedBuffer::<u32>::new(&c.gpu, 0).ctx("managed 0")?;
    fill.launch(&s, (1u32, 64u32), 1, &mut managed).ctx("launch into 0 managed")?;
    ensure(managed.as_mut_slice().ctx("view")?.is_empty(), || "managed".into())?;
    let mut nothing: Vec<u32> = Vec::new();
    c.gpu
        .with_registered(&mut nothing, |reg| s.copy(&empty, reg))
        .ctx("register nothing")?
        .ctx("copy into nothing registered")?;
    // An append buffer with no room: every push is counted, none kept.
    let mut hits = AppendBuffer::<u32>::new(&c.gpu, 0).ctx("append 0")?;
    k::hostile_push::load(&c.tests).ctx("load")?.launch(&s, (2u32, 64u32), 100, &mut hits).ctx("launch")?;
    ensure(hits.pushed().ctx("pushed")? == 100, || "pushes not counted".into())?;
    ensure(hits.to_vec().ctx("read")?.is_empty(), || "kept a push without room".into())?;
    check_all("untouched", &buf.to_vec().ctx("read")?, &[5u32; 16])
}
