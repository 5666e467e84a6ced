//! Launch shapes, indices, block barriers, deadlocks, panics and shared memory.

mod common;

use std::sync::atomic::{AtomicU32, Ordering};

use cohort_cpu::*;
use common::{Out, rand, smem};

fn encode(t: Dim3, b: Dim3) -> u64 {
    u64::from(t.x)
        | u64::from(t.y) << 10
        | u64::from(t.z) << 20
        | u64::from(b.x) << 26
        | u64::from(b.y) << 36
        | u64::from(b.z) << 46
}

fn check_indices(spec: LaunchSpec) {
    let (g, b) = (spec.grid, spec.block);
    let n = g.volume() * b.volume();
    let out = Out::new(n as usize);
    launch(&spec, &|| {
        assert_eq!(block_dim(), b);
        assert_eq!(grid_dim(), g);
        assert_eq!(lane_id(), thread_rank() % 32);
        assert_eq!(warp_id(), thread_rank() / 32);
        assert_eq!(lanemask_lt(), (1u32 << lane_id()) - 1);
        assert_eq!(lanemask_le() ^ lanemask_lt(), lanemask_eq());
        assert_eq!(lanemask_gt() | lanemask_le(), u32::MAX);
        assert_eq!(lanemask_ge(), !lanemask_lt());
        out.set(global_rank(), encode(thread_idx(), block_idx()));
    })
    .unwrap();
    // Reference: ranks flatten x fastest, blocks likewise.
    let mut i = 0;
    for bz in 0..g.z {
        for by in 0..g.y {
            for bx in 0..g.x {
                for tz in 0..b.z {
                    for ty in 0..b.y {
                        for tx in 0..b.x {
                            assert_eq!(
                                out.get(i),
                                encode(Dim3::new(tx, ty, tz), Dim3::new(bx, by, bz)),
                                "element {i} of {spec:?}"
                            );
                            i += 1;
                        }
                    }
                }
            }
        }
    }
}

#[test]
fn launch_indices_1d_2d_3d() {
    for fast in [false, true] {
        for (g, b) in [
            (Dim3::new(7, 1, 1), Dim3::new(96, 1, 1)),
            (Dim3::new(3, 2, 1), Dim3::new(8, 5, 1)),
            (Dim3::new(2, 3, 2), Dim3::new(4, 3, 5)),
            (Dim3::new(1, 1, 1), Dim3::new(1, 1, 1)),
        ] {
            let spec = LaunchSpec::new(g, b);
            check_indices(if fast { spec.fast_path() } else { spec });
        }
    }
}

#[test]
fn launch_invalid_shapes_refused() {
    let k = &|| {};
    for spec in [
        LaunchSpec::new(0u32, 32u32),
        LaunchSpec::new(1u32, 2048u32),
        LaunchSpec::new(1u32, (1u32, 1u32, 65u32)),
        LaunchSpec::new(1u32, 32u32).dynamic_shared(SHARED_CAPACITY as u32 + 1),
    ] {
        let e = launch(&spec, k).unwrap_err();
        assert!(matches!(e, CpuError::InvalidLaunch { .. }), "{e}");
    }
}

#[test]
fn block_sync_threads_reverses_through_shared_memory() {
    let (blocks, n) = (5u32, 200u32);
    let input: Vec<u32> = (0..blocks * n).map(|i| rand(u64::from(i), 1) as u32).collect();
    let out = Out::new((blocks * n) as usize);
    let spec = LaunchSpec::new(blocks, n).dynamic_shared(n * 4);
    launch(&spec, &|| {
        let (off, bytes) = dynamic_shared();
        assert_eq!(bytes, n * 4);
        let s = smem::<u32>(off);
        let t = thread_rank();
        let g = global_rank();
        // SAFETY: `s` points to `n` u32s of this block's window; thread `t` writes slot `t`.
        unsafe { s.add(t as usize).write(input[g as usize]) };
        sync_threads();
        // SAFETY: every slot was written before the barrier; reads only.
        let v = unsafe { s.add((n - 1 - t) as usize).read() };
        out.set(g, u64::from(v));
    })
    .unwrap();
    for b in 0..blocks {
        for t in 0..n {
            assert_eq!(out.get(u64::from(b * n + t)), u64::from(input[(b * n + n - 1 - t) as usize]));
        }
    }
}

#[test]
fn block_sync_threads_count_and_or() {
    let (blocks, n) = (4u32, 128u32);
    let out = Out::new((blocks * n * 3) as usize);
    launch(&LaunchSpec::new(blocks, n), &|| {
        let g = global_rank();
        let b = u64::from(block_idx().x);
        let p = rand(g, 7).is_multiple_of(b + 2);
        let all = b == 3 || p;
        let c = sync_threads_count(p);
        let a = sync_threads_and(all);
        let o = sync_threads_or(p && b != 1);
        out.set(g * 3, u64::from(c));
        out.set(g * 3 + 1, u64::from(a));
        out.set(g * 3 + 2, u64::from(o));
    })
    .unwrap();
    for b in 0..u64::from(blocks) {
        let ps: Vec<bool> = (0..u64::from(n)).map(|t| rand(b * u64::from(n) + t, 7).is_multiple_of(b + 2)).collect();
        let count = ps.iter().filter(|p| **p).count() as u64;
        let all = b == 3 || ps.iter().all(|p| *p);
        let any = b != 1 && ps.iter().any(|p| *p);
        for t in 0..u64::from(n) {
            let g = b * u64::from(n) + t;
            assert_eq!(out.get(g * 3), count, "count, block {b}");
            assert_eq!(out.get(g * 3 + 1), u64::from(all), "and, block {b}");
            assert_eq!(out.get(g * 3 + 2), u64::from(any), "or, block {b}");
        }
    }
}

#[test]
fn block_named_barrier_producer_consumer() {
    // Warps 0-1 produce, warps 2-3 consume; barrier 1 for all 128 threads, reached from two
    // different call sites; barrier 2 for the 64 consumers only.
    let n = 128u32;
    let out = Out::new(64);
    launch(&LaunchSpec::new(1u32, n).dynamic_shared(64 * 4), &|| {
        let s = smem::<u32>(0);
        let t = thread_rank();
        if t < 64 {
            // SAFETY: producer `t` writes slot `t` of the 64-word dynamic window.
            unsafe { s.add(t as usize).write(t * t + 1) };
            barrier_named(1, n);
        } else {
            barrier_named(1, n);
            // SAFETY: the slots were written before barrier 1, which orders them.
            let v = unsafe { s.add((t - 64) as usize).read() };
            barrier_named(2, 64);
            out.set(u64::from(t - 64), u64::from(v));
        }
    })
    .unwrap();
    for i in 0..64 {
        assert_eq!(out.get(i), i * i + 1);
    }
}

#[test]
fn block_deadlock_at_different_barriers_names_both_sites() {
    let lines = AtomicU32::new(0);
    let e = launch(&LaunchSpec::new(2u32, 64u32), &|| {
        if thread_rank() < 32 {
            lines.fetch_or(line!() + 1, Ordering::Relaxed);
            sync_threads();
        } else {
            sync_threads();
        }
    })
    .unwrap_err();
    let first_line = lines.into_inner();
    let (a, b) = match e {
        CpuError::BarrierMismatch { first, second, .. } => {
            assert_eq!(first.thread, Dim3::new(0, 0, 0));
            assert_eq!(second.thread, Dim3::new(32, 0, 0));
            assert_eq!(first.op, "sync_threads");
            (first.site.line(), second.site.line())
        }
        other => panic!("{other}"),
    };
    assert_eq!(a, first_line);
    assert_eq!(b, first_line + 2);
    let text = launch(&LaunchSpec::new(1u32, 64u32), &|| {
        if thread_rank() < 32 {
            sync_threads();
        } else {
            let _ = sync_threads_count(true);
        }
    })
    .unwrap_err()
    .to_string();
    assert!(text.contains("deadlock in block (0,0,0)") && text.contains("sync_threads_count"), "{text}");
    assert!(text.contains(file!()), "{text}");
}

#[test]
fn block_exited_thread_at_barrier_is_an_error() {
    let e = launch(&LaunchSpec::new(3u32, 40u32), &|| {
        if block_idx().x == 2 && thread_rank() == 5 {
            return;
        }
        sync_threads();
    })
    .unwrap_err();
    match e {
        CpuError::ExitedAtBarrier { block, waiting, exited } => {
            assert_eq!(block, Dim3::new(2, 0, 0));
            assert_eq!(exited, Dim3::new(5, 0, 0));
            assert_eq!(waiting.op, "sync_threads");
        }
        other => panic!("{other}"),
    }
}

#[test]
fn block_named_barrier_short_is_an_error() {
    let e = launch(&LaunchSpec::new(1u32, 96u32), &|| {
        if thread_rank() < 64 {
            barrier_named(3, 96);
        }
    })
    .unwrap_err();
    assert!(matches!(e, CpuError::NamedBarrierStuck { id: 3, count: 96, arrived: 64, .. }), "{e}");
}

#[test]
fn block_panic_reports_block_thread_and_line() {
    struct Guard<'a>(&'a AtomicU32);
    impl Drop for Guard<'_> {
        fn drop(&mut self) {
            self.0.fetch_add(1, Ordering::Relaxed);
        }
    }
    for fast in [false, true] {
        let drops = AtomicU32::new(0);
        let started = AtomicU32::new(0);
        let line = line!() + 7;
        let spec = LaunchSpec::new(4u32, 32u32).workers(1);
        let spec = if fast { spec.fast_path() } else { spec };
        let e = launch(&spec, &|| {
            started.fetch_add(1, Ordering::Relaxed);
            let _g = Guard(&drops);
            if block_idx().x == 3 && thread_idx().x == 17 {
                panic!("index {} out of range", 99);
            }
            if !fast {
                sync_threads();
            }
        })
        .unwrap_err();
        match &e {
            CpuError::Panic { block, thread, location: Some((file, l, _)), message } => {
                assert_eq!(*block, Dim3::new(3, 0, 0));
                assert_eq!(*thread, Dim3::new(17, 0, 0));
                assert_eq!(*l, line);
                assert!(file.ends_with("block.rs"), "{file}");
                assert_eq!(message, "index 99 out of range");
            }
            other => panic!("{other}"),
        }
        assert!(e.to_string().contains("in block (3,0,0) thread (17,0,0)"), "{e}");
        // Every thread that started dropped its locals: the panicking one by unwinding, the
        // others at the barrier when the launch was abandoned.
        assert_eq!(drops.into_inner(), started.into_inner());
    }
}

#[test]
fn block_panics_outside_kernels_still_reach_the_previous_hook() {
    // A launch installs the hook; a panic outside any kernel must still be a normal panic.
    launch(&LaunchSpec::new(1u32, 1u32), &|| {}).unwrap();
    assert!(!in_kernel());
    let r = std::panic::catch_unwind(|| panic!("outside"));
    assert!(r.is_err());
}

#[test]
fn shared_static_per_block_and_garbage_filled() {
    static A: u8 = 0;
    static B: u8 = 0;
    let blocks = 6u32;
    let out = Out::new((blocks * 64) as usize);
    launch(&LaunchSpec::new(blocks, 64u32).dynamic_shared(12), &|| {
        let a = shared_static(&raw const A as usize, 64 * 4, 16);
        let b = shared_static(&raw const B as usize, 8, 8);
        assert_eq!(a, shared_static(&raw const A as usize, 64 * 4, 16));
        assert!(a >= 16 && b >= a + 256 && b % 8 == 0);
        let t = thread_rank();
        let pa = smem::<u32>(a);
        if t == 0 {
            // SAFETY: thread 0 alone reads the fresh 8-byte static before any write.
            let fresh = unsafe { smem::<[u8; 8]>(b).read() };
            assert_eq!(fresh, [GARBAGE; 8]);
            // SAFETY: as above, the 12 dynamic bytes.
            let d = unsafe { smem::<[u8; 12]>(dynamic_shared().0).read() };
            assert_eq!(d, [GARBAGE; 12]);
        }
        sync_threads();
        // SAFETY: thread `t` writes word `t` of the 64-word static.
        unsafe { pa.add(t as usize).write(block_idx().x * 1000 + t) };
        sync_threads();
        // SAFETY: written before the barrier.
        let v = unsafe { pa.add((63 - t) as usize).read() };
        out.set(global_rank(), u64::from(v));
    })
    .unwrap();
    for b in 0..blocks {
        for t in 0..64 {
            assert_eq!(out.get(u64::from(b * 64 + t)), u64::from(b * 1000 + 63 - t));
        }
    }
}

#[test]
fn block_fast_path_refuses_collectives() {
    let e = launch(&LaunchSpec::new(2u32, 32u32).fast_path(), &|| sync_threads()).unwrap_err();
    assert!(matches!(e, CpuError::Misuse { op: "sync_threads", .. }), "{e}");
}

#[test]
fn block_random_schedule_keeps_results() {
    for seed in [1, 2, 3] {
        let n = 256u32;
        let out = Out::new(4);
        launch(&LaunchSpec::new(4u32, n).dynamic_shared(n * 8).random_schedule(seed), &|| {
            let s = smem::<u64>(0);
            let t = thread_rank();
            // SAFETY: slot `t` belongs to thread `t` until the barrier.
            unsafe { s.add(t as usize).write(rand(global_rank(), 3) % 1000) };
            let mut stride = n / 2;
            while stride > 0 {
                sync_threads();
                if t < stride {
                    // SAFETY: thread `t` updates slot `t` from slot `t + stride`, which no thread
                    // writes in this step; the barrier above ordered the previous step.
                    unsafe { s.add(t as usize).write(s.add(t as usize).read() + s.add((t + stride) as usize).read()) };
                }
                stride /= 2;
            }
            if t == 0 {
                // SAFETY: thread 0 wrote slot 0 last.
                out.set(u64::from(block_idx().x), unsafe { s.read() });
            }
        })
        .unwrap();
        for b in 0..4u64 {
            let want: u64 = (0..u64::from(n)).map(|t| rand(b * u64::from(n) + t, 3) % 1000).sum();
            assert_eq!(out.get(b), want);
        }
    }
}

#[test]
fn block_launch_from_inside_a_kernel_keeps_the_outer_context() {
    // A device-side launch runs on the launching OS thread; the outer thread's indices and
    // collectives work again after it.
    let inner = Out::new(64);
    let outer = Out::new(64);
    launch(&LaunchSpec::new(2u32, 32u32).workers(1), &|| {
        let me = global_rank();
        if thread_rank() == 0 {
            launch(&LaunchSpec::new(2u32, 32u32).workers(1), &|| {
                let v = shfl_xor(u32::MAX, global_rank(), 1, 32);
                inner.add(global_rank(), v + 1);
            })
            .unwrap();
        }
        sync_threads();
        assert_eq!(global_rank(), me);
        outer.set(me, u64::from(ballot(u32::MAX, lane_id() % 2 == 0)));
    })
    .unwrap();
    for g in 0..64u64 {
        // Two outer blocks each launched once: every inner element was set twice.
        assert_eq!(inner.get(g), u64::MAX.wrapping_add(2 * ((g ^ 1) + 1)));
        assert_eq!(outer.get(g), 0x5555_5555);
    }
}

#[test]
fn block_spin_wait_on_another_thread_with_yield_now() {
    // Thread 0 waits for a flag thread 63 sets (it runs later in rank order): a spin lock's
    // pattern. Also in a cooperative launch where block 0 waits for block 1 on the same worker.
    use std::sync::atomic::AtomicBool;
    let flag = AtomicBool::new(false);
    let seen = AtomicU32::new(0);
    launch(&LaunchSpec::new(1u32, 64u32), &|| {
        if thread_rank() == 0 {
            while !flag.load(Ordering::Acquire) {
                yield_now();
            }
            seen.fetch_add(1, Ordering::Relaxed);
        } else if thread_rank() == 63 {
            flag.store(true, Ordering::Release);
        }
    })
    .unwrap();
    assert_eq!(seen.load(Ordering::Relaxed), 1);
    let flag = AtomicBool::new(false);
    launch(&LaunchSpec::new(2u32, 32u32).cooperative().workers(1), &|| {
        if block_idx().x == 0 {
            while !flag.load(Ordering::Acquire) {
                yield_now();
            }
            seen.fetch_add(1, Ordering::Relaxed);
        } else if thread_rank() == 5 {
            flag.store(true, Ordering::Release);
        }
        grid_sync();
    })
    .unwrap();
    assert_eq!(seen.load(Ordering::Relaxed), 33);
}

#[test]
fn block_spin_that_nothing_releases_times_out() {
    let line = line!() + 5;
    let spec = LaunchSpec::new(1u32, 32u32).spin_limit(std::time::Duration::from_millis(50));
    let e = launch(&spec, &|| {
        if thread_rank() == 3 {
            loop {
                yield_now();
            }
        }
        sync_threads();
    })
    .unwrap_err();
    match e {
        CpuError::SpinTimeout { thread, site, millis: 50, .. } => {
            assert_eq!(thread, Dim3::new(3, 0, 0));
            assert_eq!(site.line(), line);
        }
        other => panic!("{other}"),
    }
}

#[test]
fn block_random_schedule_changes_the_order_and_is_reproducible() {
    let order = |seed: Option<u64>| {
        let v = std::sync::Mutex::new(Vec::new());
        let spec = LaunchSpec::new(1u32, 64u32);
        let spec = if let Some(s) = seed { spec.random_schedule(s) } else { spec };
        launch(&spec, &|| {
            sync_threads();
            v.lock().unwrap().push(thread_rank());
        })
        .unwrap();
        v.into_inner().unwrap()
    };
    assert_eq!(order(None), (0..64).collect::<Vec<_>>());
    let (a, b, c) = (order(Some(1)), order(Some(1)), order(Some(2)));
    assert_eq!(a, b);
    assert_ne!(a, c);
    let mut sorted = a.clone();
    sorted.sort_unstable();
    assert_eq!(sorted, (0..64).collect::<Vec<_>>());
    assert_ne!(a, sorted);
}
