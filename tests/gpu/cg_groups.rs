//! Group members against a CPU model of each group: tiles (1–32, static and dynamic), coalesced
//! groups of divergent branches, large tiles, tiles of large tiles, shuffles of many types,
//! grid-wide reduction and the grid/block members.

use cohort_runtime::{Dim3, LaunchConfig};
use cohort_test_kernels::cg_collectives::S24;
use cohort_test_kernels::cg_groups::{self as k, LARGE_SLOTS, MEMBER_SLOTS, MemberArgs};
use cohort_tests::{Context, Ctx, TestResult, check_all, each_thread, ensure, gpu_trial, rng};
use libtest_mimic::Trial;
use rand::Rng;

pub fn trials() -> Vec<Trial> {
    vec![
        gpu_trial("cg_tile_members_1", |c| tile(c, 1)),
        gpu_trial("cg_tile_members_2", |c| tile(c, 2)),
        gpu_trial("cg_tile_members_4", |c| tile(c, 4)),
        gpu_trial("cg_tile_members_8", |c| tile(c, 8)),
        gpu_trial("cg_tile_members_16", |c| tile(c, 16)),
        gpu_trial("cg_tile_members_32", |c| tile(c, 32)),
        gpu_trial("cg_dyn_tile_members", dyn_tile),
        gpu_trial("cg_coalesced_members_divergent", coalesced),
        gpu_trial("cg_large_tile_members_64", |c| large(c, 64)),
        gpu_trial("cg_large_tile_members_128", |c| large(c, 128)),
        gpu_trial("cg_large_tile_members_256", |c| large(c, 256)),
        gpu_trial("cg_large_tile_members_512", |c| large(c, 512)),
        gpu_trial("cg_tile_of_large_tile", tile_of_large),
        gpu_trial("cg_shfl_types", shfl_types),
        gpu_trial("cg_grid_reduce", grid_reduce),
        gpu_trial("cg_grid_and_block_members", grid_members),
    ]
}

struct Inputs {
    vals: Vec<u32>,
    srcs: Vec<u32>,
    preds: Vec<u32>,
    keys: Vec<u32>,
}

fn inputs(name: &str, n: usize, uniform_every: usize) -> Inputs {
    let mut r = rng(name);
    let vals = (0..n).map(|_| r.random()).collect();
    let srcs = (0..n).map(|_| r.random_range(0..64)).collect();
    let preds = (0..n).map(|_| r.random_range(0..2)).collect();
    // Keys in a small range so matches happen; every `uniform_every`-th group of 32 gets one
    // key so `match_all` succeeds there.
    let keys = (0..n).map(|i| if (i / 32) % uniform_every == 0 { 7 } else { r.random_range(0..3) }).collect();
    Inputs { vals, srcs, preds, keys }
}

/// The expected members for a thread of rank `rank` in a group whose members (global
/// indices, rank order) are `m`.
fn expect(
    inp: &Inputs,
    m: &[usize],
    i: usize,
    a: MemberArgs,
    meta: (u32, u32),
    lane_mask: u32,
    xor: Option<u32>,
) -> [u32; MEMBER_SLOTS] {
    let n = m.len() as u32;
    let rank = m.iter().position(|&j| j == i).unwrap() as u32;
    let v = |r: u32| inp.vals[m[r as usize]];
    let p = |r: u32| inp.preds[m[r as usize]] & 1 == 1;
    let key = |r: u32| inp.keys[m[r as usize]];
    let ballot = (0..n).filter(|&r| p(r)).fold(0u32, |b, r| b | 1 << r);
    let all_mask = if n == 32 { u32::MAX } else { (1u32 << n) - 1 };
    let matching = (0..n).filter(|&r| key(r) == key(rank)).fold(0u32, |b, r| b | 1 << r);
    let all_eq = (0..n).all(|r| key(r) == key(0));
    [
        rank,
        n,
        meta.0,
        meta.1,
        v(inp.srcs[i] % n),
        if rank >= a.delta { v(rank - a.delta) } else { v(rank) },
        if rank + a.delta < n { v(rank + a.delta) } else { v(rank) },
        // Tiles: `shfl_xor`; other groups: `shfl` from a rank past the group (own value).
        xor.map_or(v(rank), |x| if (rank ^ x) < n { v(rank ^ x) } else { v(rank) }),
        (ballot != 0) as u32,
        (ballot == all_mask) as u32,
        ballot,
        matching,
        if all_eq { all_mask } else { 0 },
        all_eq as u32,
        v((rank + 1) % n),
        lane_mask,
    ]
}

fn tile(c: &Ctx, size: u32) -> TestResult {
    // A 1-D launch, and a 3-D one (ranks, lanes and warps follow the linear thread rank).
    let shapes = [(Dim3::new(3, 1, 1), Dim3::new(256, 1, 1)), (Dim3::new(2, 1, 2), Dim3::new(8, 4, 3))];
    for (grid, blk) in shapes {
        let name = format!("cg_tile_members_{size}");
        let block = blk.volume() as u32;
        let n = (grid.volume() * blk.volume()) as usize;
        let inp = inputs(&name, n, 3);
        let mut r = rng(&format!("{name}-args"));
        let a = MemberArgs { delta: r.random_range(0..size.max(2)), xor_mask: r.random_range(0..size) };
        let s = c.gpu.new_stream().ctx("stream")?;
        let up = |v: &Vec<u32>| c.gpu.upload(v).ctx("upload");
        let (dv, ds, dp, dk) = (up(&inp.vals)?, up(&inp.srcs)?, up(&inp.preds)?, up(&inp.keys)?);
        let mut out = c.gpu.upload(&vec![[u32::MAX; MEMBER_SLOTS]; n]).ctx("alloc")?;
        let cfg = LaunchConfig::new(grid, blk);
        match size {
            1 => k::tile_members::<1>::load(&c.tests).ctx("load")?.launch(&s, cfg, &dv, &ds, &dp, &dk, a, &mut out),
            2 => k::tile_members::<2>::load(&c.tests).ctx("load")?.launch(&s, cfg, &dv, &ds, &dp, &dk, a, &mut out),
            4 => k::tile_members::<4>::load(&c.tests).ctx("load")?.launch(&s, cfg, &dv, &ds, &dp, &dk, a, &mut out),
            8 => k::tile_members::<8>::load(&c.tests).ctx("load")?.launch(&s, cfg, &dv, &ds, &dp, &dk, a, &mut out),
            16 => k::tile_members::<16>::load(&c.tests).ctx("load")?.launch(&s, cfg, &dv, &ds, &dp, &dk, a, &mut out),
            _ => k::tile_members::<32>::load(&c.tests).ctx("load")?.launch(&s, cfg, &dv, &ds, &dp, &dk, a, &mut out),
        }
        .ctx("launch")?;
        // `i` is the thread's linear rank in the grid (what `index_1d` gives), `rb` in its block.
        let want: Vec<[u32; MEMBER_SLOTS]> = (0..n)
            .map(|i| {
                let rb = i % block as usize;
                let start = i - rb % size as usize;
                let m: Vec<usize> = (start..start + size as usize).collect();
                let lane_mask = if size == 32 {
                    u32::MAX
                } else {
                    ((1u32 << size) - 1) << (rb % 32 / size as usize * size as usize)
                };
                expect(&inp, &m, i, a, ((rb / size as usize) as u32, block / size), lane_mask, Some(a.xor_mask))
            })
            .collect();
        check_all(
            &format!("tile of {size}, grid {grid:?} x block {blk:?}: members (delta {}, xor {})", a.delta, a.xor_mask),
            &out.to_vec().ctx("read")?,
            &want,
        )?;
    }
    Ok(())
}

fn dyn_tile(c: &Ctx) -> TestResult {
    for size in [1u32, 2, 4, 8, 16, 32] {
        let name = format!("cg_dyn_tile_members_{size}");
        let n = 2 * 128;
        let inp = inputs(&name, n, 2);
        let a = MemberArgs { delta: size / 2, xor_mask: size.saturating_sub(1) };
        let s = c.gpu.new_stream().ctx("stream")?;
        let up = |v: &Vec<u32>| c.gpu.upload(v).ctx("upload");
        let (dv, ds, dp, dk) = (up(&inp.vals)?, up(&inp.srcs)?, up(&inp.preds)?, up(&inp.keys)?);
        let mut out = c.gpu.upload(&vec![[u32::MAX; MEMBER_SLOTS]; n]).ctx("alloc")?;
        k::dyn_tile_members::load(&c.tests)
            .ctx("load")?
            .launch(&s, (2u32, 128u32), size, &dv, &ds, &dp, &dk, a, &mut out)
            .ctx("launch")?;
        let want: Vec<[u32; MEMBER_SLOTS]> = (0..n)
            .map(|i| {
                let lane = i % 32;
                let start = i - lane % size as usize;
                let m: Vec<usize> = (start..start + size as usize).collect();
                let lane_mask =
                    if size == 32 { u32::MAX } else { ((1u32 << size) - 1) << (lane / size as usize * size as usize) };
                // The parent is a tile of 32: meta ranks count within the warp.
                expect(&inp, &m, i, a, ((lane / size as usize) as u32, 32 / size), lane_mask, Some(a.xor_mask))
            })
            .collect();
        check_all(&format!("dynamic tile of {size}: members"), &out.to_vec().ctx("read")?, &want)?;
    }
    Ok(())
}

fn coalesced(c: &Ctx) -> TestResult {
    let n = 4 * 128;
    let inp = inputs("cg_coalesced_members", n, 4);
    let mut r = rng("cg_coalesced_members-branch");
    let branch: Vec<u32> = (0..n).map(|i| if i % 96 < 32 { 1 } else { r.random_range(0..2) }).collect();
    let a = MemberArgs { delta: 2, xor_mask: 0 };
    let s = c.gpu.new_stream().ctx("stream")?;
    let up = |v: &Vec<u32>| c.gpu.upload(v).ctx("upload");
    let (db, dv, ds, dp, dk) = (up(&branch)?, up(&inp.vals)?, up(&inp.srcs)?, up(&inp.preds)?, up(&inp.keys)?);
    let mut out = c.gpu.upload(&vec![[u32::MAX; MEMBER_SLOTS]; n]).ctx("alloc")?;
    k::coalesced_members::load(&c.tests)
        .ctx("load")?
        .launch(&s, (4u32, 128u32), &db, &dv, &ds, &dp, &dk, a, &mut out)
        .ctx("launch")?;
    let got = out.to_vec().ctx("read")?;
    let mut want = Vec::with_capacity(n);
    for i in 0..n {
        let (lane, base) = (i % 32, i / 32 * 32);
        let mask = got[i][15];
        let same: u32 = (0..32).filter(|&l| branch[base + l] & 1 == branch[i] & 1).fold(0, |m, l| m | 1 << l);
        ensure(mask >> lane & 1 == 1 && mask & !same == 0, || {
            format!("thread {i}: mask {mask:#010x} outside its branch {same:#010x}")
        })?;
        let m: Vec<usize> = (0..32).filter(|l| mask >> l & 1 == 1).map(|l| base + l).collect();
        want.push(expect(&inp, &m, i, a, (0, 1), mask, None));
    }
    check_all("coalesced group members (rank-relative shuffles, packed ballot and match)", &got, &want)
}

fn large(c: &Ctx, size: u32) -> TestResult {
    let name = format!("cg_large_tile_members_{size}");
    let (blocks, block) = (3u32, 512u32);
    let n = (blocks * block) as usize;
    let mut r = rng(&name);
    let vals: Vec<u32> = (0..n).map(|_| r.random_range(0..1 << 20)).collect();
    // Whole tiles of true or of false here and there, so `all` and `any` see both answers.
    let preds: Vec<u32> = (0..n)
        .map(|i| {
            if (i / size as usize) % 3 == 0 {
                1
            } else if (i / size as usize) % 3 == 1 {
                0
            } else {
                r.random_range(0..2)
            }
        })
        .collect();
    let s = c.gpu.new_stream().ctx("stream")?;
    let (dv, dp) = (c.gpu.upload(&vals).ctx("upload")?, c.gpu.upload(&preds).ctx("upload")?);
    let mut out = c.gpu.upload(&vec![[u32::MAX; LARGE_SLOTS]; n]).ctx("alloc")?;
    let cfg = LaunchConfig::new(blocks, block);
    match size {
        64 => k::large_members::<64>::load(&c.tests).ctx("load")?.launch(&s, cfg, &dv, &dp, &mut out),
        128 => k::large_members::<128>::load(&c.tests).ctx("load")?.launch(&s, cfg, &dv, &dp, &mut out),
        256 => k::large_members::<256>::load(&c.tests).ctx("load")?.launch(&s, cfg, &dv, &dp, &mut out),
        _ => k::large_members::<512>::load(&c.tests).ctx("load")?.launch(&s, cfg, &dv, &dp, &mut out),
    }
    .ctx("launch")?;
    let sz = size as usize;
    let want: Vec<[u32; LARGE_SLOTS]> = (0..n)
        .map(|i| {
            let rb = i % block as usize;
            let start = i - rb % sz;
            let rank = (i - start) as u32;
            let meta = (rb / sz) as u32;
            let any = (start..start + sz).any(|j| preds[j] & 1 == 1);
            let all = (start..start + sz).all(|j| preds[j] & 1 == 1);
            let sum = (start..start + sz).map(|j| vals[j]).sum::<u32>();
            [
                rank,
                size,
                meta,
                block / size,
                vals[start + ((7 * meta + 3) % size) as usize],
                any as u32,
                all as u32,
                vals[start + ((rank + 33) % size) as usize],
                sum,
            ]
        })
        .collect();
    check_all(&format!("large tile of {size}: members"), &out.to_vec().ctx("read")?, &want)
}

fn tile_of_large(c: &Ctx) -> TestResult {
    let mut r = rng("cg_tile_of_large");
    let n = 2 * 256;
    let vals: Vec<u32> = (0..n).map(|_| r.random_range(0..1000)).collect();
    let s = c.gpu.new_stream().ctx("stream")?;
    let dv = c.gpu.upload(&vals).ctx("upload")?;
    let mut out = c.gpu.upload(&vec![[u32::MAX; 4]; n]).ctx("alloc")?;
    k::tile_of_large::load(&c.tests).ctx("load")?.launch(&s, (2u32, 256u32), &dv, &mut out).ctx("launch")?;
    let want: Vec<[u32; 4]> = (0..n)
        .map(|i| {
            let in128 = i % 128;
            let start = i - i % 4;
            [(i % 4) as u32, (in128 / 4) as u32, 32, vals[start..start + 4].iter().sum()]
        })
        .collect();
    check_all("tile of 4 of a tile of 128", &out.to_vec().ctx("read")?, &want)
}

fn shfl_expected<T: Copy>(v: &[T]) -> Vec<[T; 4]> {
    (0..v.len())
        .map(|i| {
            let (base, r) = (i / 32 * 32, i % 32);
            let at = |k: usize| v[base + k];
            [
                at((5 * r + 3) % 32),
                if r >= 3 { at(r - 3) } else { at(r) },
                if r + 5 < 32 { at(r + 5) } else { at(r) },
                at(r ^ 9),
            ]
        })
        .collect()
}

macro_rules! shfl_case {
    ($c:ident, $s:ident, $r:ident, $t:ty, $gen:expr) => {{
        let n = 256;
        let vals: Vec<$t> = (0..n).map(|_| $gen(&mut $r)).collect();
        let dv = $c.gpu.upload(&vals).ctx("upload")?;
        let mut out = $c.gpu.upload(&vec![[vals[0]; 4]; n]).ctx("alloc")?;
        k::shfl_types::<$t>::load(&$c.tests).ctx("load")?.launch(&$s, (2u32, 128u32), &dv, &mut out).ctx("launch")?;
        check_all(concat!("shuffles of ", stringify!($t)), &out.to_vec().ctx("read")?, &shfl_expected(&vals))?;
    }};
}

fn shfl_types(c: &Ctx) -> TestResult {
    let mut r = rng("cg_shfl_types");
    let s = c.gpu.new_stream().ctx("stream")?;
    shfl_case!(c, s, r, u8, |r: &mut rand::rngs::StdRng| r.random::<u8>());
    shfl_case!(c, s, r, u16, |r: &mut rand::rngs::StdRng| r.random::<u16>());
    shfl_case!(c, s, r, u64, |r: &mut rand::rngs::StdRng| r.random::<u64>());
    shfl_case!(c, s, r, f64, |r: &mut rand::rngs::StdRng| r.random::<f64>());
    shfl_case!(c, s, r, [u32; 3], |r: &mut rand::rngs::StdRng| [r.random(), r.random(), r.random()]);
    shfl_case!(c, s, r, S24, |r: &mut rand::rngs::StdRng| S24 { a: r.random(), b: r.random(), c: r.random() });
    shfl_case!(c, s, r, [u64; 4], |r: &mut rand::rngs::StdRng| [r.random(), r.random(), r.random(), r.random()]);
    Ok(())
}

fn grid_reduce(c: &Ctx) -> TestResult {
    let mut r = rng("cg_grid_reduce");
    let kern = k::grid_reduce::load(&c.tests).ctx("load")?;
    let full = kern.function().persistent_config(256, 0).ctx("config")?;
    let s = c.gpu.new_stream().ctx("stream")?;
    for blocks in [1u32, 5, full.grid.x] {
        let n = (blocks * 256) as usize - 17;
        let data: Vec<u64> = (0..n).map(|_| r.random_range(0..1 << 40)).collect();
        let dd = c.gpu.upload(&data).ctx("upload")?;
        let mut scratch = cohort_runtime::GridVecBuffer::<u64>::zeroed(&c.gpu, 2 * blocks as usize).ctx("alloc")?;
        let mut out = c.gpu.upload(&vec![[0u64; 4]; (blocks * 256) as usize]).ctx("alloc")?;
        kern.launch_cooperative(&s, LaunchConfig::new(blocks, 256), &dd, &mut scratch, &mut out).ctx("launch")?;
        let threads = (blocks * 256) as u64;
        // Threads past `n` contribute 0 (and 1 to the `^ 1` sum, and `k` to the `+ k` sums).
        let sum = data.iter().sum::<u64>();
        let sum_xor = data.iter().map(|v| v ^ 1).sum::<u64>() + (threads - n as u64);
        let more = (0..8u64).map(|k| sum + k * threads).fold(0u64, u64::wrapping_add);
        let want = [sum, *data.iter().max().unwrap(), sum_xor, more];
        check_all(
            &format!("{blocks} blocks: 11 grid reductions in a row, in every thread"),
            &out.to_vec().ctx("read")?,
            &vec![want; (blocks * 256) as usize],
        )?;
    }
    Ok(())
}

fn grid_members(c: &Ctx) -> TestResult {
    let kern = k::grid_members::load(&c.tests).ctx("load")?;
    let s = c.gpu.new_stream().ctx("stream")?;
    let (grid, block) = (Dim3::new(3, 2, 1), Dim3::new(8, 4, 2));
    let n = (grid.volume() * block.volume()) as usize;
    let mut out = c.gpu.upload(&vec![[u64::MAX; 17]; n]).ctx("alloc")?;
    kern.launch_cooperative(&s, LaunchConfig::new(grid, block), &mut out).ctx("launch")?;
    let mut want = vec![[0u64; 17]; n];
    for (b, t) in each_thread(grid, block) {
        let br = b.linear_in(grid);
        let rank = br * block.volume() + t.linear_in(block);
        want[rank as usize] = [
            rank,
            br,
            n as u64,
            grid.volume(),
            3,
            2,
            1,
            b.x as u64,
            b.y as u64,
            b.z as u64,
            8,
            4,
            2,
            t.x as u64,
            t.y as u64,
            t.z as u64,
            br,
        ];
    }
    check_all("grid and block members", &out.to_vec().ctx("read")?, &want)
}
