//! Cooperative launches: grid sync, the co-residency limit, blocks that skip the grid sync.

mod common;

use cohort_cpu::*;
use common::{Out, rand};

#[test]
fn grid_sync_phases_across_blocks() {
    // Three phases: each block sums its inputs into partials[b]; after a grid sync, every block
    // reads all partials; after another, block 0 checks the results are still in place.
    let (blocks, n) = (9u32, 64u32);
    let partial = Out::new(blocks as usize);
    let total = Out::new(blocks as usize);
    let after = Out::new(blocks as usize);
    for b in 0..u64::from(blocks) {
        partial.set(b, 0);
    }
    launch(&LaunchSpec::new(blocks, n).cooperative().workers(2), &|| {
        let b = u64::from(block_idx().x);
        partial.add(b, rand(global_rank(), 2) % 1000);
        grid_sync();
        if thread_rank() == 0 {
            total.set(b, (0..u64::from(blocks)).map(|i| partial.get(i)).sum());
        }
        grid_sync();
        if thread_rank() == 0 {
            after.set(b, (0..u64::from(blocks)).map(|i| total.get(i)).max().unwrap());
        }
    })
    .unwrap();
    let want: u64 = (0..u64::from(blocks * n)).map(|g| rand(g, 2) % 1000).sum();
    for b in 0..u64::from(blocks) {
        assert_eq!(partial.get(b), (0..u64::from(n)).map(|t| rand(b * u64::from(n) + t, 2) % 1000).sum());
        assert_eq!(total.get(b), want);
        assert_eq!(after.get(b), want);
    }
}

#[test]
fn grid_oversize_cooperative_refused() {
    let limit = max_coresident_blocks(256);
    assert_eq!(limit, MAX_COOPERATIVE_THREADS / 256);
    let e = launch(&LaunchSpec::new(limit as u32 + 1, 256u32).cooperative(), &|| {}).unwrap_err();
    assert_eq!(e, CpuError::CooperativeTooLarge { blocks: limit + 1, block_threads: 256, limit });
    assert!(e.to_string().contains(&format!("at most {limit}")), "{e}");
    // At the limit it runs.
    launch(&LaunchSpec::new(limit as u32, 256u32).cooperative(), &|| grid_sync()).unwrap();
}

#[test]
fn grid_block_exiting_before_grid_sync_is_an_error() {
    let line = line!() + 5;
    let e = launch(&LaunchSpec::new(4u32, 32u32).cooperative().workers(2), &|| {
        if block_idx().x == 2 {
            return;
        }
        grid_sync();
    })
    .unwrap_err();
    match e {
        CpuError::GridSyncExited { site, exited_block, .. } => {
            assert_eq!(site.line(), line);
            assert_eq!(exited_block, Dim3::new(2, 0, 0));
        }
        other => panic!("{other}"),
    }
}

#[test]
fn grid_sync_outside_cooperative_launch_refused() {
    let e = launch(&LaunchSpec::new(2u32, 32u32), &|| grid_sync()).unwrap_err();
    assert!(
        matches!(&e, CpuError::Misuse { op: "grid_sync", reason, .. } if reason.contains("not cooperative")),
        "{e}"
    );
}

#[test]
fn grid_panic_in_one_block_ends_the_cooperative_launch() {
    let e = launch(&LaunchSpec::new(6u32, 32u32).cooperative().workers(2), &|| {
        grid_sync();
        if block_idx().x == 4 && thread_rank() == 3 {
            panic!("late");
        }
        grid_sync();
    })
    .unwrap_err();
    assert!(matches!(&e, CpuError::Panic { block, thread, .. } if block.x == 4 && thread.x == 3), "{e}");
}
