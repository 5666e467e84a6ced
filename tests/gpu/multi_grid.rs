//! Multi-grid launches (`#[kernel(multi_grid)]`, `MultiGrid`, `MultiGridVec`): ranks, phase
//! exchanges across GPUs checked element by element, the refusals of `submit`, and the
//! divergences that end a launch with an `Err` (in child processes: they trap). A group of one
//! GPU runs everywhere there is a GPU; groups of every GPU need 2.

use cohort_runtime::{Error, Gpu, LaunchConfig, MultiGrid, MultiGridVecBuffer, Stream, StreamOptions};
use cohort_test_kernels::multi_grid as k;
use cohort_tests::{Context, TestResult, check_all, ensure, gpus_trial};
use libtest_mimic::Trial;

pub fn trials() -> Vec<Trial> {
    vec![
        gpus_trial("multi_grid_ranks_one_gpu", 1, |g| ranks(&g[..1])),
        gpus_trial("multi_grid_ranks_every_gpu", 2, ranks),
        gpus_trial("multi_grid_vec_rounds_one_gpu", 1, |g| rounds(&g[..1])),
        gpus_trial("multi_grid_vec_rounds_every_gpu", 2, rounds),
        gpus_trial("multi_grid_jacobi_one_gpu", 1, |g| jacobi(&g[..1])),
        gpus_trial("multi_grid_jacobi_every_gpu", 2, jacobi),
        gpus_trial("multi_grid_refusals_one_gpu", 1, refusals_one),
        gpus_trial("multi_grid_refusals_two_gpus", 2, refusals_two),
        gpus_trial("multi_grid_skipped_sync_is_err", 2, |_| child_expects("mg-skip")),
        gpus_trial("multi_grid_vec_phase_mismatch_is_err", 2, |_| child_expects("mg-phase")),
    ]
}

/// One block per SM of 256 threads: co-resident on every GPU these tests run on.
fn config(gpus: &[Gpu]) -> LaunchConfig {
    let sms = gpus.iter().map(|g| g.info().sms).min().unwrap_or(1);
    LaunchConfig::new(sms, 256)
}

fn modules(gpus: &[Gpu]) -> Result<Vec<cohort_runtime::Module>, String> {
    gpus.iter().map(|g| g.load(&cohort_test_kernels::PTX)).collect::<Result<_, _>>().ctx("load")
}

fn ranks(gpus: &[Gpu]) -> TestResult {
    let group = MultiGrid::new(gpus).ctx("MultiGrid::new")?;
    let mods = modules(gpus)?;
    let kernels: Vec<k::mg_ranks> = mods.iter().map(k::mg_ranks::load).collect::<Result<_, _>>().ctx("load kernel")?;
    let cfg = config(gpus);
    let per = cfg.total_threads() as usize;
    let mut outs = Vec::new();
    for g in gpus {
        outs.push((
            g.upload(&vec![u64::MAX; per]).ctx("alloc")?,
            g.upload(&vec![u32::MAX; per]).ctx("alloc")?,
            g.upload(&vec![u64::MAX; per]).ctx("alloc")?,
        ));
    }
    let mut launch = group.launch(cfg);
    // Added in reverse order: ranks follow the group, not the calls.
    for ((kern, g), (r, m, t)) in kernels.iter().zip(gpus).zip(outs.iter_mut()).rev() {
        kern.add_to(&mut launch, g.stream(), r, m, t).ctx("add_to")?;
    }
    launch.submit().ctx("submit")?;
    let n = gpus.len();
    for (rank, (r, m, t)) in outs.iter().enumerate() {
        let want_r: Vec<u64> = (0..per).map(|i| (rank * per + i) as u64).collect();
        check_all(&format!("grid {rank} thread ranks"), &r.to_vec().ctx("read")?, &want_r)?;
        check_all(&format!("grid {rank} meta"), &m.to_vec().ctx("read")?, &vec![(rank * 1000 + n) as u32; per])?;
        check_all(&format!("grid {rank} num_threads"), &t.to_vec().ctx("read")?, &vec![(n * per) as u64; per])?;
    }
    Ok(())
}

/// The CPU reference of `mg_rounds`: each thread's sum, per grid.
fn rounds_reference(n: u32, grids: usize, per: usize, rounds: u32) -> Vec<Vec<u32>> {
    (0..grids)
        .map(|g| {
            (0..per)
                .map(|i| {
                    let t = (g * per + i) as u32;
                    let mut acc = 0u32;
                    for round in 0..rounds {
                        for kk in 0..8u32 {
                            let j =
                                (t.wrapping_mul(7919).wrapping_add(kk.wrapping_mul(n / 8 + 1)).wrapping_add(round)) % n;
                            acc = acc.wrapping_add(k::round_value(round, j));
                        }
                    }
                    acc
                })
                .collect()
        })
        .collect()
}

fn rounds(gpus: &[Gpu]) -> TestResult {
    let group = MultiGrid::new(gpus).ctx("MultiGrid::new")?;
    let mods = modules(gpus)?;
    let kernels: Vec<k::mg_rounds> =
        mods.iter().map(k::mg_rounds::load).collect::<Result<_, _>>().ctx("load kernel")?;
    let cfg = config(gpus);
    let per = cfg.total_threads() as usize;
    // Not a multiple of anything: the last stride is partial on some grids.
    let n: u32 = 1_000_003;
    let rounds = 12;
    let mut v = MultiGridVecBuffer::<u32>::new(&group, n as usize).ctx("MultiGridVecBuffer::new")?;
    v.copy_from(&vec![0xdead_beef; n as usize]).ctx("fill")?;
    let mut sums: Vec<_> = gpus.iter().map(|g| g.upload(&vec![0u32; per])).collect::<Result<_, _>>().ctx("alloc")?;
    // Twice: the second launch reuses the barrier pool and must wait for the first.
    for _ in 0..2 {
        let mut launch = group.launch(cfg);
        for ((kern, g), s) in kernels.iter().zip(gpus).zip(sums.iter_mut()) {
            kern.add_to(&mut launch, g.stream(), &mut v, s, rounds).ctx("add_to")?;
        }
        launch.submit().ctx("submit")?;
    }
    let want = rounds_reference(n, gpus.len(), per, rounds);
    for (rank, s) in sums.iter().enumerate() {
        check_all(&format!("grid {rank} sums"), &s.to_vec().ctx("read")?, &want[rank])?;
    }
    let last: Vec<u32> = (0..n).map(|j| k::round_value(rounds - 1, j)).collect();
    for (rank, r) in v.replicas().iter().enumerate() {
        check_all(&format!("replica {rank} after the last round"), &r.to_vec().ctx("read")?, &last)?;
    }
    Ok(())
}

/// The multi-grid Jacobi solver (`cohort multi-grid`'s kernel) on a random 5-point system of
/// 300 × 300 unknowns, 40 sweeps: bit-identical to the same sweeps on the CPU, on every replica.
fn jacobi(gpus: &[Gpu]) -> TestResult {
    use cohort_kernels::multi::jacobi_multi;
    let sys = cohort_host::reference::JacobiSystem::generate(300, 0x1ac0b1);
    let (row_ptr, cols, vals, diag, b) = (&sys.row_ptr, &sys.cols, &sys.vals, &sys.diag, &sys.b);
    let n = sys.len();
    let pairs = 20u32;
    let x = sys.solve_cpu(2 * pairs as usize);
    // The reference runs the kernel's own row update on the CPU; that it solves the system is
    // checked apart: the residual must shrink.
    let (r0, r) = (sys.residual(&vec![0.0; n]), sys.residual(&x));
    ensure(r < r0 * 0.5, || format!("Jacobi does not converge: residual {r0} -> {r}"))?;
    let group = MultiGrid::new(gpus).ctx("MultiGrid::new")?;
    let modules = gpus.iter().map(|g| g.load(&cohort_kernels::PTX)).collect::<Result<Vec<_>, _>>().ctx("load")?;
    let ks: Vec<jacobi_multi> = modules.iter().map(jacobi_multi::load).collect::<Result<_, _>>().ctx("load kernel")?;
    let mut parts = Vec::new();
    for g in gpus {
        parts.push((
            g.upload(row_ptr).ctx("upload")?,
            g.upload(cols).ctx("upload")?,
            g.upload(vals).ctx("upload")?,
            g.upload(diag).ctx("upload")?,
            g.upload(b).ctx("upload")?,
        ));
    }
    let mut gx = MultiGridVecBuffer::<f32>::new(&group, n).ctx("vec")?;
    let mut gy = MultiGridVecBuffer::<f32>::new(&group, n).ctx("vec")?;
    gx.copy_from(&vec![0.0; n]).ctx("zero")?;
    gy.copy_from(&vec![f32::NAN; n]).ctx("poison")?;
    let mut launch = group.launch(config(gpus));
    for ((kern, g), (rp, c, v, d, bb)) in ks.iter().zip(gpus).zip(&parts) {
        kern.add_to(&mut launch, g.stream(), rp, c, v, d, bb, &mut gx, &mut gy, pairs).ctx("add_to")?;
    }
    launch.submit().ctx("submit")?;
    let bits = |v: &[f32]| v.iter().map(|f| f.to_bits()).collect::<Vec<u32>>();
    for (rank, replica) in gx.replicas().iter().enumerate() {
        check_all(&format!("replica {rank} of x (bits)"), &bits(&replica.to_vec().ctx("read")?), &bits(&x))?;
    }
    Ok(())
}

fn expect_err(what: &str, r: Result<(), Error>, needles: &[&str]) -> TestResult {
    match r {
        Ok(()) => Err(format!("{what}: accepted")),
        Err(e) => {
            let msg = e.to_string();
            for n in needles {
                ensure(msg.contains(n), || format!("{what}: error does not mention `{n}`: {msg}"))?;
            }
            println!("{what}: {msg}");
            Ok(())
        }
    }
}

fn refusals_one(gpus: &[Gpu]) -> TestResult {
    let g = &gpus[0];
    ensure(MultiGrid::new(&[]).is_err(), || "an empty MultiGrid was accepted".into())?;
    let twice = Gpu::new(g.info().ordinal).ctx("Gpu::new")?;
    expect_err("one device twice", MultiGrid::new(&[g.clone(), twice]).map(drop), &["appears twice"])?;
    let group = MultiGrid::new(&gpus[..1]).ctx("MultiGrid::new")?;
    let module = g.load(&cohort_test_kernels::PTX).ctx("load")?;
    let kern = k::mg_ranks::load(&module).ctx("load kernel")?;
    let per = 256;
    let (mut r, mut m, mut t) =
        (g.zeroed::<u64>(per).ctx("alloc")?, g.zeroed::<u32>(per).ctx("alloc")?, g.zeroed::<u64>(per).ctx("alloc")?);
    expect_err("no grids", group.launch((1u32, 256u32)).submit(), &["no grids"])?;
    // A grid that cannot be co-resident.
    let huge = LaunchConfig::new(g.info().sms * 64, 1024);
    let mut launch = group.launch(huge);
    kern.add_to(&mut launch, g.stream(), &mut r, &mut m, &mut t).ctx("add_to")?;
    match launch.submit() {
        Err(Error::CooperativeTooLarge { .. }) => {}
        other => return Err(format!("a grid too large to be co-resident: {other:?}")),
    }
    // The same GPU twice in one launch.
    let other = g.new_stream().ctx("stream")?;
    let mut launch = group.launch((1u32, 256u32));
    kern.add_to(&mut launch, g.stream(), &mut r, &mut m, &mut t).ctx("add_to")?;
    let (mut r2, mut m2, mut t2) =
        (g.zeroed::<u64>(per).ctx("alloc")?, g.zeroed::<u32>(per).ctx("alloc")?, g.zeroed::<u64>(per).ctx("alloc")?);
    expect_err(
        "a second grid on one GPU",
        kern.add_to(&mut launch, &other, &mut r2, &mut m2, &mut t2),
        &["already has a grid"],
    )?;
    // Dropping an unsubmitted launch launches nothing.
    drop(launch);
    g.synchronize().ctx("sync")?;
    check_all("outputs of a dropped launch", &r.to_vec().ctx("read")?, &vec![0u64; per])?;
    // A launch whose stream is capturing is refused before anything is enqueued.
    let cap: Stream = g.new_stream_with(StreamOptions::new().non_blocking(true)).ctx("stream")?;
    let graph = cap.capture(|s| {
        let mut launch = group.launch((1u32, 256u32));
        kern.add_to(&mut launch, s, &mut r, &mut m, &mut t)?;
        launch.submit()
    });
    expect_err("a captured multi-grid launch", graph.map(drop), &["captured"])?;
    Ok(())
}

fn refusals_two(gpus: &[Gpu]) -> TestResult {
    let (a, b) = (&gpus[0], &gpus[1]);
    let group = MultiGrid::new(&gpus[..2]).ctx("MultiGrid::new")?;
    let mods = modules(&gpus[..2])?;
    let ks: Vec<k::mg_ranks> = mods.iter().map(k::mg_ranks::load).collect::<Result<_, _>>().ctx("load kernel")?;
    let per = 256;
    let outs = |g: &Gpu| -> Result<_, String> {
        Ok((g.zeroed::<u64>(per).ctx("alloc")?, g.zeroed::<u32>(per).ctx("alloc")?, g.zeroed::<u64>(per).ctx("alloc")?))
    };
    let (mut ra, mut ma, mut ta) = outs(a)?;
    let (mut rb, mut mb, mut tb) = outs(b)?;
    // A GPU without its grid.
    let mut launch = group.launch((1u32, 256u32));
    ks[0].add_to(&mut launch, a.stream(), &mut ra, &mut ma, &mut ta).ctx("add_to")?;
    expect_err("a GPU without its grid", launch.submit(), &["have none"])?;
    // The kernel of GPU 0 on a stream of GPU 1.
    let mut launch = group.launch((1u32, 256u32));
    ks[0].add_to(&mut launch, a.stream(), &mut ra, &mut ma, &mut ta).ctx("add_to")?;
    ks[0].add_to(&mut launch, b.stream(), &mut rb, &mut mb, &mut tb).ctx("add_to")?;
    expect_err("a kernel loaded on another GPU than its stream", launch.submit(), &["another"])?;
    // Both grids write one buffer (peer access on, so only the race is left to refuse).
    if b.can_access_peer(a).ctx("can_access_peer")? {
        b.enable_peer_access(a).ctx("peer")?;
        let mut launch = group.launch((1u32, 256u32));
        ks[0].add_to(&mut launch, a.stream(), &mut ra, &mut ma, &mut ta).ctx("add_to")?;
        ks[1].add_to(&mut launch, b.stream(), &mut ra, &mut mb, &mut tb).ctx("add_to")?;
        expect_err("two grids writing one buffer", launch.submit(), &["races between GPUs"])?;
    }
    // A vector made for another group (same GPUs, other order).
    let swapped = MultiGrid::new(&[b.clone(), a.clone()]).ctx("MultiGrid::new swapped")?;
    let rk: Vec<k::mg_rounds> = mods.iter().map(k::mg_rounds::load).collect::<Result<_, _>>().ctx("load kernel")?;
    let mut v = MultiGridVecBuffer::<u32>::new(&swapped, 1000).ctx("vec")?;
    let mut launch = group.launch((1u32, 256u32));
    expect_err(
        "a MultiGridVecBuffer of another group",
        rk[0].add_to(&mut launch, a.stream(), &mut v, &mut ma, 1),
        &["made for devices"],
    )?;
    // Nothing ran: every output still zero.
    for g in gpus {
        g.synchronize().ctx("sync")?;
    }
    check_all("outputs of refused launches", &ra.to_vec().ctx("read")?, &vec![0u64; per])?;
    check_all("outputs of refused launches", &rb.to_vec().ctx("read")?, &vec![0u64; per])?;
    Ok(())
}

/// Runs a child scenario of this module and checks that it reported the expected `Err`s.
fn child_expects(which: &str) -> TestResult {
    crate::launch::run_child(which).map(drop)
}

/// Child scenarios (a trap ends the CUDA context, so each runs in a process of its own, on
/// isolated contexts of GPUs 0 and 1).
pub fn child(which: &str) -> Result<(), String> {
    let gpus = [Gpu::isolated(0).ctx("isolated 0")?, Gpu::isolated(1).ctx("isolated 1")?];
    let group = MultiGrid::new(&gpus).ctx("MultiGrid::new")?.with_timeout(Some(std::time::Duration::from_millis(300)));
    let mods = modules(&gpus)?;
    let cfg = config(&gpus);
    let per = cfg.total_threads() as usize;
    let mut outs: Vec<_> = gpus.iter().map(|g| g.zeroed::<u32>(per)).collect::<Result<_, _>>().ctx("alloc")?;
    // Which grids must fail, and what their errors must say.
    let (failing, needles): (&[usize], &[&str]) = match which {
        "mg-skip" => {
            let ks: Vec<k::mg_skip_sync> =
                mods.iter().map(k::mg_skip_sync::load).collect::<Result<_, _>>().ctx("load")?;
            let mut launch = group.launch(cfg);
            for ((kern, g), o) in ks.iter().zip(&gpus).zip(outs.iter_mut()) {
                kern.add_to(&mut launch, g.stream(), 1, o).ctx("add_to")?;
            }
            launch.submit().ctx("submit")?;
            // Grid 1 skipped the sync and finished; grid 0 waited for it until the limit.
            (&[0], &["mg_skip_sync", "multi_grid.sync", "not every one of the 2 grids arrived", "test-kernels"])
        }
        "mg-phase" => {
            let ks: Vec<k::mg_wrong_vec> =
                mods.iter().map(k::mg_wrong_vec::load).collect::<Result<_, _>>().ctx("load")?;
            let mut a = MultiGridVecBuffer::<u32>::new(&group, 100).ctx("vec a")?;
            let mut b = MultiGridVecBuffer::<u32>::new(&group, 100).ctx("vec b")?;
            let mut launch = group.launch(cfg);
            for ((kern, g), o) in ks.iter().zip(&gpus).zip(outs.iter_mut()) {
                kern.add_to(&mut launch, g.stream(), &mut a, &mut b, o).ctx("add_to")?;
            }
            launch.submit().ctx("submit")?;
            // Grid 0 saw the other vector's tag; grid 1, never released, waited until the limit.
            (&[0, 1], &["mg_wrong_vec", "MultiGridVec::publish", "another multi-grid barrier", "test-kernels"])
        }
        other => return Err(format!("unknown multi-grid scenario {other}")),
    };
    // The grids that must finish are waited for first: after a kernel traps, the driver fails
    // every later synchronization in the process (measured on driver 580), even of work that
    // finished.
    let mut errors = Vec::new();
    let order: Vec<usize> = (0..gpus.len()).filter(|r| !failing.contains(r)).chain(failing.iter().copied()).collect();
    for rank in order {
        let g = &gpus[rank];
        let started = std::time::Instant::now();
        match g.stream().synchronize() {
            Ok(()) => ensure(!failing.contains(&rank), || format!("`{which}`: grid {rank} finished without an error"))?,
            Err(e) => {
                println!("ERROR AS RETURNED (grid {rank}, after {:?}): {e}", started.elapsed());
                ensure(failing.contains(&rank), || format!("`{which}`: grid {rank} failed: {e}"))?;
                errors.push(e.to_string());
            }
        }
    }
    let all = errors.join("\n");
    for n in needles {
        ensure(all.contains(n), || format!("`{which}`: the errors do not mention `{n}`:\n{all}"))?;
    }
    Ok(())
}
