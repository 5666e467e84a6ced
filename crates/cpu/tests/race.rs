//! The shared-memory race check.

mod common;

use cohort_cpu::*;
use common::smem;

#[test]
fn race_unsynchronized_shared_write_then_read_is_reported() {
    let line = line!() + 7;
    let e = launch(&LaunchSpec::new(1u32, 64u32).dynamic_shared(256).race_check(), &|| {
        let t = thread_rank();
        let s = smem::<u32>(0);
        let w = |i: u32, v: u32| {
            // SAFETY: slot `i` of the 64-word window.
            unsafe { s.add(i as usize).write(v) };
            shared_access(i * 4, 4, true);
        };
        w(t, t);
        // Missing sync_threads(): thread t reads its neighbour's slot.
        shared_access(((t + 1) % 64) * 4, 4, false);
    })
    .unwrap_err();
    match e {
        CpuError::SharedRace { addr, first, second, .. } => {
            // Thread 0 reads slot 1 after thread 1 wrote it: rank order runs thread 0 first,
            // so thread 1's write finds thread 0's read.
            assert_eq!(addr, 4);
            assert_eq!(first, (Dim3::new(0, 0, 0), false, first.2));
            assert_eq!((second.0, second.1), (Dim3::new(1, 0, 0), true));
            assert_eq!(second.2.line(), line);
        }
        other => panic!("{other}"),
    }
}

#[test]
fn race_barriers_order_accesses() {
    for named in [false, true] {
        launch(&LaunchSpec::new(2u32, 64u32).dynamic_shared(256).race_check(), &|| {
            let t = thread_rank();
            shared_access(t * 4, 4, true);
            if named {
                barrier_named(5, 64);
            } else {
                sync_threads();
            }
            shared_access(((t + 1) % 64) * 4, 4, false);
            sync_threads();
            shared_access(((t + 7) % 64) * 4, 4, true);
        })
        .unwrap();
    }
    // Warp-synchronous exchange ordered by sync_warp; the two warps touch disjoint words.
    launch(&LaunchSpec::new(1u32, 64u32).race_check(), &|| {
        let t = thread_rank();
        shared_access(t * 4, 4, true);
        sync_warp(u32::MAX);
        shared_access((t ^ 1) * 4, 4, false);
    })
    .unwrap();
    // Without the sync_warp it is a race.
    let e = launch(&LaunchSpec::new(1u32, 32u32).race_check(), &|| {
        let t = thread_rank();
        shared_access(t * 4, 4, true);
        let _ = ballot(u32::MAX, true);
        shared_access((t ^ 1) * 4, 4, false);
    })
    .unwrap_err();
    assert!(matches!(e, CpuError::SharedRace { .. }), "{e}");
}
