//! Warp collectives: shuffles, votes, matches, reductions, activemask, sync_warp, and their
//! divergence errors.

// Identical branches are the point: the same call at two call sites.
#![allow(clippy::if_same_then_else)]

mod common;

use cohort_cpu::*;
use common::{Out, rand};

/// A `Copy` value with padding (24 + 1 bytes, padded to 32), shuffled by its bytes.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Wide {
    a: [f64; 3],
    b: u8,
}

fn wide(g: u64) -> Wide {
    Wide { a: [g as f64, -(g as f64), g as f64 * 0.5], b: g as u8 }
}

/// The reference source lane of a shuffle of `width`-lane segments.
fn reference(mode: ShflMode, lane: u32, b: u32, width: u32) -> u32 {
    let seg = lane / width * width;
    let r = lane % width;
    match mode {
        ShflMode::Idx => seg + b % width,
        ShflMode::Up if r >= b => lane - b,
        ShflMode::Down if r + b < width => lane + b,
        ShflMode::Bfly => lane ^ b,
        _ => lane,
    }
}

#[test]
fn warp_shuffles_every_mode_and_width() {
    let (blocks, n) = (3u32, 96u32);
    let total = u64::from(blocks * n);
    for width in [32u32, 16, 8, 4, 2] {
        for (mode, b) in [
            (ShflMode::Idx, 5u32),
            (ShflMode::Idx, 0),
            (ShflMode::Up, 1),
            (ShflMode::Up, 3),
            (ShflMode::Down, 1),
            (ShflMode::Down, 2),
            (ShflMode::Bfly, 1),
        ] {
            let b = if mode == ShflMode::Bfly { b.min(width - 1) } else { b };
            let out = Out::new(total as usize);
            let wout = std::sync::Mutex::new(vec![None; total as usize]);
            launch(&LaunchSpec::new(blocks, n), &|| {
                let g = global_rank();
                let v = rand(g, 11) as u32;
                let got = match mode {
                    ShflMode::Idx => shfl_idx(u32::MAX, v, b, width),
                    ShflMode::Up => shfl_up(u32::MAX, v, b, width),
                    ShflMode::Down => shfl_down(u32::MAX, v, b, width),
                    ShflMode::Bfly => shfl_xor(u32::MAX, v, b, width),
                };
                out.set(g, u64::from(got));
                let w = shfl(mode, u32::MAX, wide(g), b, shfl_c(width, mode == ShflMode::Up));
                wout.lock().unwrap()[g as usize] = Some(w);
            })
            .unwrap();
            let wout = wout.into_inner().unwrap();
            for g in 0..total {
                let lane = (g % u64::from(n)) as u32 % 32;
                let src = g - u64::from(lane) + u64::from(reference(mode, lane, b, width));
                assert_eq!(out.get(g), u64::from(rand(src, 11) as u32), "{mode:?} b={b} width={width} g={g}");
                assert_eq!(wout[g as usize], Some(wide(src)), "{mode:?} b={b} width={width} g={g}");
            }
        }
    }
}

#[test]
fn warp_votes_matches_and_reductions() {
    let (blocks, n) = (2u32, 64u32);
    let total = u64::from(blocks * n);
    let k = 10;
    let out = Out::new((total * k) as usize);
    launch(&LaunchSpec::new(blocks, n), &|| {
        let g = global_rank();
        let x = rand(g, 5);
        let mask = if warp_id() == 0 { u32::MAX } else { 0x0f0f_f0f0 };
        if mask & (1 << lane_id()) == 0 {
            return;
        }
        let p = x.is_multiple_of(3);
        let small = (x % 4) as u32;
        let r = [
            u64::from(vote_all(mask, p)),
            u64::from(vote_any(mask, p)),
            u64::from(vote_uni(mask, p)),
            u64::from(ballot(mask, p)),
            u64::from(match_any_u32(mask, small)),
            u64::from(match_any_u64(mask, u64::from(small) << 40)),
            {
                let (m, p) = match_all_u32(mask, small / 4);
                u64::from(m) | u64::from(p) << 32
            },
            u64::from(redux_u32(ReduxOp::Add, mask, x as u32)),
            u64::from(redux_i32(ReduxOp::Min, mask, x as i32) as u32),
            u64::from(redux_u32(ReduxOp::Xor, mask, x as u32) ^ redux_u32(ReduxOp::Max, mask, x as u32)),
        ];
        for (i, v) in r.into_iter().enumerate() {
            out.set(g * k + i as u64, v);
        }
    })
    .unwrap();
    for w in 0..total / 32 {
        let mask: u32 = if w % 2 == 0 { u32::MAX } else { 0x0f0f_f0f0 };
        let lanes: Vec<u32> = (0..32).filter(|l| mask & (1 << l) != 0).collect();
        let x = |l: u32| rand(w * 32 + u64::from(l), 5);
        let p = |l: u32| x(l).is_multiple_of(3);
        let set: u32 = lanes.iter().filter(|&&l| p(l)).fold(0, |a, l| a | 1 << l);
        for &l in &lanes {
            let g = w * 32 + u64::from(l);
            let same: u32 = lanes.iter().filter(|&&j| x(j) % 4 == x(l) % 4).fold(0, |a, j| a | 1 << j);
            let want = [
                u64::from(set == mask),
                u64::from(set != 0),
                u64::from(set == mask || set == 0),
                u64::from(set),
                u64::from(same),
                u64::from(same),
                u64::from(mask) | 1 << 32,
                u64::from(lanes.iter().fold(0u32, |a, &j| a.wrapping_add(x(j) as u32))),
                u64::from(lanes.iter().map(|&j| x(j) as i32).min().unwrap() as u32),
                u64::from(
                    lanes.iter().fold(0u32, |a, &j| a ^ x(j) as u32)
                        ^ lanes.iter().map(|&j| x(j) as u32).max().unwrap(),
                ),
            ];
            for (i, v) in want.into_iter().enumerate() {
                assert_eq!(out.get(g * k + i as u64), v, "op {i}, warp {w}, lane {l}");
            }
        }
    }
}

#[test]
fn warp_partial_warp_shuffle_names_the_lanes() {
    let line = line!() + 4;
    let e = launch(&LaunchSpec::new(1u32, 64u32), &|| {
        let v = lane_id();
        if lane_id() < 16 {
            let _ = shfl_down(u32::MAX, v, 1, 32);
        }
    })
    .unwrap_err();
    match e {
        CpuError::WarpDivergence { warp, op, site, mask, arrived, lane, elsewhere, .. } => {
            assert_eq!((warp, op, mask, arrived, lane), (0, "shfl_down", u32::MAX, 0xffff, 16));
            assert_eq!(site.line(), line);
            assert_eq!(elsewhere, Elsewhere::Exited);
        }
        other => panic!("{other}"),
    }
    // Two halves at two different shuffle sites: the other site is named.
    let e = launch(&LaunchSpec::new(1u32, 32u32), &|| {
        if lane_id() < 16 {
            let _ = shfl_xor(u32::MAX, 1u32, 1, 32);
        } else {
            let _ = shfl_xor(u32::MAX, 1u32, 1, 32);
        }
    })
    .unwrap_err();
    let text = e.to_string();
    match e {
        CpuError::WarpDivergence {
            arrived: 0xffff,
            lane: 16,
            elsewhere: Elsewhere::At { op: "shfl_xor", site },
            ..
        } => {
            assert!(site.line() > 0);
        }
        other => panic!("{other}"),
    }
    assert!(text.starts_with("divergence: `shfl_xor` of the group of lanes 0xffffffff was reached at"), "{text}");
    assert!(text.contains("by lanes 0x0000ffff only"), "{text}");
}

#[test]
fn warp_sub_masks_and_sync_warp_across_sites() {
    // Half-warp groups shuffle within their own mask; sync_warp meets across sites.
    let out = Out::new(64);
    launch(&LaunchSpec::new(1u32, 64u32), &|| {
        let l = lane_id();
        let mask = if l < 16 { 0xffff } else { 0xffff_0000 };
        let v = shfl_idx(mask, global_rank(), (l & 16) + 3, 32);
        if l % 2 == 0 {
            sync_warp(u32::MAX);
        } else {
            sync_warp(u32::MAX);
        }
        out.set(global_rank(), v);
    })
    .unwrap();
    for g in 0..64 {
        let l = g % 32;
        assert_eq!(out.get(g), g - l + (l & 16) + 3);
    }
}

#[test]
fn warp_activemask_is_the_lanes_at_the_call() {
    let out = Out::new(128);
    launch(&LaunchSpec::new(1u32, 100u32), &|| {
        let l = lane_id();
        let m = if l % 3 == 0 {
            activemask()
        } else if l % 3 == 1 {
            activemask()
        } else {
            return;
        };
        // The group it names can meet: a ballot over it.
        let b = ballot(m, true);
        out.set(u64::from(thread_rank()), u64::from(m) | u64::from(b) << 32);
    })
    .unwrap();
    for t in 0..100u32 {
        let (w, l) = (t / 32, t % 32);
        let k = (100 - w * 32).min(32);
        let want: u32 = (0..k).filter(|j| j % 3 == l % 3).fold(0, |a, j| a | 1 << j);
        let got = out.get(u64::from(t));
        if l % 3 == 2 {
            assert_eq!(got, u64::MAX);
        } else {
            assert_eq!(got, u64::from(want) | u64::from(want) << 32, "thread {t}");
        }
    }
}

#[test]
fn warp_misuse_is_reported() {
    // The calling lane outside its mask.
    let e = launch(&LaunchSpec::new(1u32, 32u32), &|| {
        let _ = ballot(0x1, true);
    })
    .unwrap_err();
    assert!(matches!(&e, CpuError::Misuse { op: "ballot", reason, .. } if reason.contains("not in the mask")), "{e}");
    // Lanes passing different masks.
    let e = launch(&LaunchSpec::new(1u32, 32u32), &|| {
        let m = if lane_id() < 16 { u32::MAX } else { 0xffff_0000 };
        let _ = vote_any(m, true);
    })
    .unwrap_err();
    assert!(matches!(&e, CpuError::Misuse { reason, .. } if reason.contains("same mask")), "{e}");
    // A mask naming lanes a 40-thread block's second warp doesn't have.
    let e = launch(&LaunchSpec::new(1u32, 40u32), &|| {
        let _ = vote_all(u32::MAX, true);
    })
    .unwrap_err();
    assert!(matches!(&e, CpuError::Misuse { reason, .. } if reason.contains("does not have")), "{e}");
    // A shuffle reading a lane outside the mask.
    let e = launch(&LaunchSpec::new(1u32, 32u32), &|| {
        let _ = shfl_idx(0xffff, 1u32, 20, 32);
    })
    .unwrap_err();
    assert!(matches!(&e, CpuError::Misuse { reason, .. } if reason.contains("not in the mask")), "{e}");
    // One call site shuffling two types (a generic function): refused, never reinterpreted.
    fn generic<T: Copy + 'static>(v: T) -> T {
        shfl_xor(u32::MAX, v, 1, 32)
    }
    let e = launch(&LaunchSpec::new(1u32, 32u32), &|| {
        if lane_id() % 2 == 0 {
            let _ = generic(7u32);
        } else {
            let _ = generic(true);
        }
    })
    .unwrap_err();
    assert!(matches!(&e, CpuError::Misuse { reason, .. } if reason.contains("different types")), "{e}");
}

#[test]
fn warp_shuffle_scan_in_blocks_of_any_shape() {
    // An inclusive warp scan by shfl_up, in a 2-D block: ranks flatten x fastest.
    let spec = LaunchSpec::new((2u32, 2u32), (16u32, 4u32));
    let out = Out::new(256);
    launch(&spec, &|| {
        let mut v = rand(global_rank(), 9) % 100;
        for d in [1, 2, 4, 8, 16] {
            let u = shfl_up(u32::MAX, v, d, 32);
            if lane_id() >= d {
                v += u;
            }
        }
        out.set(global_rank(), v);
    })
    .unwrap();
    for g in 0..256u64 {
        let base = g - g % 32;
        let want: u64 = (base..=g).map(|i| rand(i, 9) % 100).sum();
        assert_eq!(out.get(g), want, "{g}");
    }
}

#[test]
fn warp_shuffle_large_and_zero_sized_values() {
    let out = std::sync::Mutex::new(vec![[0u64; 16]; 64]);
    launch(&LaunchSpec::new(2u32, 32u32), &|| {
        let g = global_rank();
        let big: [u64; 16] = core::array::from_fn(|i| rand(g, i as u64));
        let got = shfl_down(u32::MAX, big, 3, 8);
        let () = shfl_idx(u32::MAX, (), 0, 32);
        out.lock().unwrap()[g as usize] = got;
    })
    .unwrap();
    let out = out.into_inner().unwrap();
    for g in 0..64u64 {
        let l = g % 32;
        let src = if l % 8 + 3 < 8 { g + 3 } else { g };
        assert_eq!(out[g as usize], core::array::from_fn(|i| rand(src, i as u64)), "{g}");
    }
}

#[test]
fn warp_gather_gives_every_lane_every_value_and_reports_divergence() {
    let (blocks, n) = (2u32, 64u32);
    let out = Out::new((blocks * n * 32) as usize);
    launch(&LaunchSpec::new(blocks, n), &|| {
        let g = global_rank();
        let v = (rand(g, 7), g as u32);
        let all = warp_gather("gather", u32::MAX, v);
        for (j, w) in all.iter().enumerate() {
            out.set(g * 32 + j as u64, w.0 ^ u64::from(w.1));
        }
    })
    .unwrap();
    for g in 0..u64::from(blocks * n) {
        let base = g / 32 * 32;
        for j in 0..32 {
            let src = base + j;
            assert_eq!(out.get(g * 32 + j), rand(src, 7) ^ src, "thread {g} slot {j}");
        }
    }
    // Half a warp at the gather: a divergence naming the op.
    let e = launch(&LaunchSpec::new(1u32, 32u32), &|| {
        if lane_id() < 16 {
            let _ = warp_gather("mma_sync", u32::MAX, 1u32);
        }
    })
    .unwrap_err();
    match e {
        CpuError::WarpDivergence { op, arrived, lane, .. } => assert_eq!((op, arrived, lane), ("mma_sync", 0xffff, 16)),
        other => panic!("{other}"),
    }
}
