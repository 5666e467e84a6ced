//! `cg::reduce` / `inclusive_scan` / `exclusive_scan`: every op over i32, u32, i64, u64, f32,
//! f64 and a 24-byte struct, on every tile size (1–512), the block, divergent coalesced groups,
//! labeled and binary partitions, against a CPU reference on random data.

use cohort::DeviceCopy;
use cohort::cg;
use cohort_runtime::LaunchConfig;
use cohort_test_kernels::cg_collectives::{self as k, BLOCK, GROUPS, S24, SLOTS, TILE_SIZES};
use cohort_tests::{Context, Ctx, TestResult, check_all, ensure, gpu_trial, rng};
use libtest_mimic::Trial;
use rand::Rng;
use rand::rngs::StdRng;

const BLOCKS: u32 = 3;

/// An element type with its host-side operators and comparison.
trait Elem: DeviceCopy + Default + PartialEq + std::fmt::Debug + std::ops::Add<Output = Self> {
    fn random(r: &mut StdRng) -> Self;
    /// `cg::plus` on the host: wrapping for integers, as the device computes it (sums of
    /// random integers overflow, and a debug build of the test checks overflow).
    fn plus(a: Self, b: Self) -> Self {
        a + b
    }
    /// Whether `got` is acceptably close to `want`; `scale` bounds the rounding of a sum.
    fn close(got: &Self, want: &Self, scale: f64) -> bool {
        let _ = scale;
        got == want
    }
    fn magnitude(&self) -> f64 {
        0.0
    }
}

macro_rules! int_elem {
    ($($t:ty)*) => {$(
        impl Elem for $t {
            fn random(r: &mut StdRng) -> Self {
                r.random()
            }
            fn plus(a: Self, b: Self) -> Self {
                a.wrapping_add(b)
            }
        }
    )*};
}
int_elem!(u32 i32 u64 i64);

impl Elem for f32 {
    fn random(r: &mut StdRng) -> Self {
        r.random_range(-1.0..1.0)
    }
    fn close(got: &Self, want: &Self, scale: f64) -> bool {
        (*got as f64 - *want as f64).abs() <= 4e-6 * scale.max(1.0)
    }
    fn magnitude(&self) -> f64 {
        self.abs() as f64
    }
}

impl Elem for f64 {
    fn random(r: &mut StdRng) -> Self {
        r.random_range(-1.0..1.0)
    }
    fn close(got: &Self, want: &Self, scale: f64) -> bool {
        (got - want).abs() <= 1e-13 * scale.max(1.0)
    }
    fn magnitude(&self) -> f64 {
        self.abs()
    }
}

impl Elem for S24 {
    fn random(r: &mut StdRng) -> Self {
        // Small ranges in `a` and `b` make ties that the comparison must break on later fields.
        S24 { a: r.random_range(0..4), b: r.random_range(0..4), c: r.random() }
    }
}

/// Host-side operators, named like the device ones.
fn host_op<
    T: Elem
        + Copy
        + PartialOrd
        + std::ops::BitAnd<Output = T>
        + std::ops::BitOr<Output = T>
        + std::ops::BitXor<Output = T>,
>(
    name: &str,
) -> fn(T, T) -> T {
    match name {
        "plus" => T::plus,
        "less" => |a, b| if b < a { b } else { a },
        "greater" => |a, b| if a < b { b } else { a },
        "bit_and" => |a, b| a & b,
        "bit_or" => |a, b| a | b,
        "bit_xor" => |a, b| a ^ b,
        _ => unreachable!(),
    }
}

fn host_op_float<T: Copy + std::ops::Add<Output = T> + PartialOrd>(name: &str) -> fn(T, T) -> T {
    match name {
        "plus" => |a, b| a + b,
        "less" => |a, b| if b < a { b } else { a },
        "greater" => |a, b| if a < b { b } else { a },
        _ => unreachable!(),
    }
}

/// The members of group `g` for thread `i`, in rank order (global thread indices).
fn members(g: usize, i: usize, meta: &[u32], n: usize) -> Vec<usize> {
    let block_base = i / BLOCK as usize * BLOCK as usize;
    let r = i - block_base;
    if g < TILE_SIZES.len() {
        let size = TILE_SIZES[g] as usize;
        let start = block_base + r / size * size;
        return (start..start + size).collect();
    }
    if g == TILE_SIZES.len() {
        return (block_base..block_base + BLOCK as usize).collect();
    }
    let which = g - TILE_SIZES.len() - 1;
    let mask = meta[3 * which * n + i];
    let warp_base = i / 32 * 32;
    (0..32).filter(|l| mask >> l & 1 == 1).map(|l| warp_base + l).collect()
}

fn check_meta(label: &[u32], pred: &[u32], meta: &[u32], n: usize) -> TestResult {
    for i in 0..n {
        let (lane, warp_base) = (i % 32, i / 32 * 32);
        let coal = meta[i];
        let same_branch: u32 = (0..32).filter(|&l| pred[warp_base + l] & 1 == pred[i] & 1).fold(0, |m, l| m | 1 << l);
        ensure(coal >> lane & 1 == 1 && coal & !same_branch == 0, || {
            format!("thread {i}: coalesced mask {coal:#010x} is not within its branch's lanes {same_branch:#010x}")
        })?;
        // Labeled partition: lanes of this warp with the same label; meta rank orders groups by
        // their lowest lane.
        let want: u32 = (0..32).filter(|&l| label[warp_base + l] == label[i]).fold(0, |m, l| m | 1 << l);
        let mut leaders: Vec<usize> = Vec::new();
        for l in 0..32 {
            if !(0..l).any(|m| label[warp_base + m] == label[warp_base + l]) {
                leaders.push(l);
            }
        }
        let my_leader = want.trailing_zeros() as usize;
        let rank = leaders.iter().position(|&l| l == my_leader).unwrap() as u32;
        let got = (meta[3 * n + i], meta[4 * n + i], meta[5 * n + i]);
        ensure(got == (want, rank, leaders.len() as u32), || {
            format!(
                "thread {i}: labeled partition (mask, meta rank, meta size) {got:?}, want {:?}",
                (want, rank, leaders.len())
            )
        })?;
        // Binary partition.
        let p = |l: usize| pred[warp_base + l] & 2 != 0;
        let set: u32 = (0..32).filter(|&l| p(l)).fold(0, |m, l| m | 1 << l);
        let want = if set == u32::MAX || set == 0 {
            (u32::MAX, 0, 1)
        } else if p(lane) {
            (set, 1, 2)
        } else {
            (!set, 0, 2)
        };
        let got = (meta[6 * n + i], meta[7 * n + i], meta[8 * n + i]);
        ensure(got == want, || {
            format!("thread {i}: binary partition (mask, meta rank, meta size) {got:?}, want {want:?}")
        })?;
    }
    Ok(())
}

fn run<T: Elem>(
    c: &Ctx,
    name: &str,
    op: fn(T, T) -> T,
    launch: impl Fn(
        &Ctx,
        &cohort_runtime::Stream,
        LaunchConfig,
        &cohort_runtime::DeviceBuffer<T>,
        &cohort_runtime::DeviceBuffer<u32>,
        &cohort_runtime::DeviceBuffer<u32>,
        cohort_runtime::DevicePtrMut<T>,
        cohort_runtime::DevicePtrMut<u32>,
    ) -> cohort_runtime::Result<()>,
) -> TestResult {
    let mut r = rng(name);
    let n = (BLOCKS * BLOCK) as usize;
    let data: Vec<T> = (0..n).map(|_| T::random(&mut r)).collect();
    let pred: Vec<u32> = (0..n).map(|_| r.random_range(0..4)).collect();
    let label: Vec<u32> = (0..n).map(|_| r.random_range(0..5)).collect();
    let s = c.gpu.new_stream().ctx("stream")?;
    let (dd, dp, dl) =
        (c.gpu.upload(&data).ctx("upload")?, c.gpu.upload(&pred).ctx("upload")?, c.gpu.upload(&label).ctx("upload")?);
    let mut out = c.gpu.upload(&vec![T::random(&mut r); SLOTS * n]).ctx("alloc")?;
    let mut meta = c.gpu.upload(&vec![u32::MAX; 9 * n]).ctx("alloc")?;
    launch(c, &s, LaunchConfig::new(BLOCKS, BLOCK), &dd, &dp, &dl, out.as_device_ptr_mut(), meta.as_device_ptr_mut())
        .ctx("launch")?;
    let got = out.to_vec().ctx("read")?;
    let meta = meta.to_vec().ctx("read")?;
    check_meta(&label, &pred, &meta, n)?;
    for g in 0..GROUPS {
        let mut want = [Vec::with_capacity(n), Vec::with_capacity(n), Vec::with_capacity(n)];
        let mut scale = vec![0.0; n];
        for (i, sc) in scale.iter_mut().enumerate() {
            let m = members(g, i, &meta, n);
            let rank =
                m.iter().position(|&j| j == i).ok_or_else(|| format!("group {g}: thread {i} not in its own group"))?;
            let fold = |upto: usize| m[1..upto].iter().fold(data[m[0]], |acc, &j| op(acc, data[j]));
            want[0].push(fold(m.len()));
            want[1].push(fold(rank + 1));
            want[2].push(if rank == 0 { T::default() } else { fold(rank) });
            *sc = m.iter().map(|&j| data[j].magnitude()).sum();
        }
        let what = |k: usize| {
            let group = match g {
                g if g < TILE_SIZES.len() => format!("tile of {}", TILE_SIZES[g]),
                10 => "block".to_string(),
                11 => "coalesced group".to_string(),
                12 => "labeled partition".to_string(),
                _ => "binary partition".to_string(),
            };
            format!("{name}: {} on a {group}", ["reduce", "inclusive_scan", "exclusive_scan"][k])
        };
        for (k, w) in want.iter().enumerate() {
            let slot = 3 * g + k;
            let got = &got[slot * n..(slot + 1) * n];
            let bad: Vec<usize> = (0..n).filter(|&i| !T::close(&got[i], &w[i], scale[i])).collect();
            if !bad.is_empty() {
                let first: Vec<String> =
                    bad.iter().take(4).map(|&i| format!("[{i}] got {:?}, want {:?}", got[i], w[i])).collect();
                return Err(format!("{}: {} of {n} differ; {}", what(k), bad.len(), first.join("; ")));
            }
        }
    }
    Ok(())
}

macro_rules! trial {
    ($v:ident, $t:ty, $op:ident, $host:expr) => {
        $v.push(gpu_trial(concat!("cg_collectives_", stringify!($t), "_", stringify!($op)), |c| {
            run::<$t>(
                c,
                concat!("cg_collectives_", stringify!($t), "_", stringify!($op)),
                $host(stringify!($op)),
                |c, s, cfg, d, p, l, o, m| {
                    let kern = k::collectives::<$t, cg::$op>::load(&c.tests)?;
                    // SAFETY: blocks of BLOCK threads, exactly `d.len()` threads, `o` holds
                    // SLOTS * n values and `m` 9 * n.
                    unsafe { kern.launch(s, cfg, d, p, l, o, m) }
                },
            )
        }));
    };
}

pub fn trials() -> Vec<Trial> {
    let mut v = Vec::new();
    trial!(v, u32, plus, host_op::<u32>);
    trial!(v, u32, less, host_op::<u32>);
    trial!(v, u32, greater, host_op::<u32>);
    trial!(v, u32, bit_and, host_op::<u32>);
    trial!(v, u32, bit_or, host_op::<u32>);
    trial!(v, u32, bit_xor, host_op::<u32>);
    trial!(v, i32, plus, host_op::<i32>);
    trial!(v, i32, less, host_op::<i32>);
    trial!(v, i32, greater, host_op::<i32>);
    trial!(v, i32, bit_and, host_op::<i32>);
    trial!(v, i32, bit_or, host_op::<i32>);
    trial!(v, i32, bit_xor, host_op::<i32>);
    trial!(v, u64, plus, host_op::<u64>);
    trial!(v, u64, less, host_op::<u64>);
    trial!(v, u64, greater, host_op::<u64>);
    trial!(v, u64, bit_and, host_op::<u64>);
    trial!(v, u64, bit_or, host_op::<u64>);
    trial!(v, u64, bit_xor, host_op::<u64>);
    trial!(v, i64, plus, host_op::<i64>);
    trial!(v, i64, less, host_op::<i64>);
    trial!(v, i64, greater, host_op::<i64>);
    trial!(v, i64, bit_and, host_op::<i64>);
    trial!(v, i64, bit_or, host_op::<i64>);
    trial!(v, i64, bit_xor, host_op::<i64>);
    trial!(v, f32, plus, host_op_float::<f32>);
    trial!(v, f32, less, host_op_float::<f32>);
    trial!(v, f32, greater, host_op_float::<f32>);
    trial!(v, f64, plus, host_op_float::<f64>);
    trial!(v, f64, less, host_op_float::<f64>);
    trial!(v, f64, greater, host_op_float::<f64>);
    trial!(v, S24, plus, host_op::<S24>);
    trial!(v, S24, less, host_op::<S24>);
    trial!(v, S24, greater, host_op::<S24>);
    trial!(v, S24, bit_and, host_op::<S24>);
    trial!(v, S24, bit_or, host_op::<S24>);
    trial!(v, S24, bit_xor, host_op::<S24>);
    v.push(gpu_trial("cg_collectives_closure_op", closure));
    v
}

fn closure(c: &Ctx) -> TestResult {
    let mut r = rng("cg_collectives_closure_op");
    let n = 512 * 2;
    let data: Vec<u32> = (0..n).map(|_| r.random::<u32>() | 1).collect();
    let label: Vec<u32> = (0..n).map(|_| r.random_range(0..3)).collect();
    let s = c.gpu.new_stream().ctx("stream")?;
    let (dd, dl) = (c.gpu.upload(&data).ctx("upload")?, c.gpu.upload(&label).ctx("upload")?);
    let mut out = c.gpu.upload(&vec![[0u32; 4]; n]).ctx("alloc")?;
    k::closure_reduce::load(&c.tests).ctx("load")?.launch(&s, (2u32, 512u32), &dd, &dl, &mut out).ctx("launch")?;
    let prod = |it: &mut dyn Iterator<Item = usize>| it.fold(1u32, |a, j| a.wrapping_mul(data[j]));
    let want: Vec<[u32; 4]> = (0..n)
        .map(|i| {
            let (w, t8, b) = (i / 32 * 32, i / 8 * 8, i / 512 * 512);
            [
                prod(&mut (w..w + 32)),
                prod(&mut (t8..t8 + 8)),
                prod(&mut (b..b + 512)),
                prod(&mut (w..w + 32).filter(|&j| label[j] == label[i])),
            ]
        })
        .collect();
    check_all("wrapping_mul reductions (tile 32, tile 8, block, labeled)", &out.to_vec().ctx("read")?, &want)
}
