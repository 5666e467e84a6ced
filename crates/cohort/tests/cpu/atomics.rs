//! Atomics of several types, and a `Mutex`.

use super::*;

/// Atomics of every type: integer add/min/max/and/or/xor/inc/dec/CAS, float add and min/max.
#[kernel]
pub fn atomic_mix(
    u: &[AtomicU32],
    s: &[AtomicI32],
    w: &[AtomicU64],
    l: &[AtomicI64],
    f: &[AtomicF32],
    d: &[AtomicF64],
) {
    let id = thread::global_id() as u32;
    u[0].fetch_add(1, Ordering::Relaxed);
    u[1].fetch_max(id, Ordering::Relaxed);
    u[2].fetch_min(id + 5, Ordering::Relaxed);
    u[3].fetch_or(1 << (id % 32), Ordering::Relaxed);
    u[4].fetch_xor(id, Ordering::Relaxed);
    u[5].fetch_inc(9, Ordering::Relaxed);
    u[6].fetch_and(!(1 << (id % 31)), Ordering::Relaxed);
    let _ = u[7].fetch_update(Ordering::Relaxed, Ordering::Relaxed, |x| Some(x + 2));
    u[8].fetch_dec(1000, Ordering::Relaxed);
    s[0].fetch_add(-(id as i32), Ordering::Relaxed);
    s[1].fetch_min(-(id as i32), Ordering::Relaxed);
    s[2].fetch_max(id as i32 - 500, Ordering::Relaxed);
    w[0].fetch_add(u64::from(id) * 1_000_000_007, Ordering::Relaxed);
    w[1].fetch_max(u64::from(id) << 33, Ordering::Relaxed);
    l[0].fetch_sub(i64::from(id) << 31, Ordering::Relaxed);
    l[1].fetch_min(-(i64::from(id) << 40), Ordering::Relaxed);
    f[0].fetch_add(0.5, Ordering::Relaxed);
    f[1].fetch_max(id as f32, Ordering::Relaxed);
    f[2].fetch_min(if id == 3 { f32::NAN } else { id as f32 + 1.0 }, Ordering::Relaxed);
    d[0].fetch_add(0.25, Ordering::Relaxed);
    d[1].fetch_max_nan(if id == 7 { f64::NAN } else { f64::from(id) }, Ordering::Relaxed);
}

#[test]
fn atomics_of_several_types() {
    use cohort::atomic::Global;
    let n = 1000u32;
    let u = atomics::<u32, Global>(&[0, 0, u32::MAX, 0, 0, 0, u32::MAX, 0, 0]);
    let s = atomics::<i32, Global>(&[0, 0, i32::MIN]);
    let w = atomics::<u64, Global>(&[0, 0]);
    let l = atomics::<i64, Global>(&[0, 0]);
    let f = atomics::<f32, Global>(&[0.0, f32::MIN, f32::MAX]);
    let d = atomics::<f64, Global>(&[0.0, 0.0]);
    launch(&LaunchSpec::new(n / 100, 100u32), &|| __cohort_kernel_atomic_mix(&u, &s, &w, &l, &f, &d)).unwrap();
    let ids = 0..n;
    let get = |a: &cohort::atomic::AtomicU32| a.load(Ordering::Relaxed);
    assert_eq!(get(&u[0]), n);
    assert_eq!(get(&u[1]), n - 1);
    assert_eq!(get(&u[2]), 5);
    assert_eq!(get(&u[3]), u32::MAX);
    assert_eq!(get(&u[4]), ids.clone().fold(0, |a, i| a ^ i));
    // atomicInc with limit 9 wraps to 0 after 9: 1000 increments from 0 leave 1000 % 10.
    assert_eq!(get(&u[5]), n % 10);
    assert_eq!(get(&u[6]), 1 << 31);
    assert_eq!(get(&u[7]), 2 * n);
    // atomicDec with limit 1000 from 0: 0 -> 1000 -> 999 -> … ; after 1000 decrements: 1.
    assert_eq!(get(&u[8]), 1);
    assert_eq!(s[0].load(Ordering::Relaxed), -(ids.clone().sum::<u32>() as i32));
    assert_eq!(s[1].load(Ordering::Relaxed), -(n as i32 - 1));
    assert_eq!(s[2].load(Ordering::Relaxed), n as i32 - 1 - 500);
    assert_eq!(w[0].load(Ordering::Relaxed), ids.clone().map(|i| u64::from(i) * 1_000_000_007).sum::<u64>());
    assert_eq!(w[1].load(Ordering::Relaxed), u64::from(n - 1) << 33);
    assert_eq!(l[0].load(Ordering::Relaxed), -ids.clone().map(|i| i64::from(i) << 31).sum::<i64>());
    assert_eq!(l[1].load(Ordering::Relaxed), -(i64::from(n - 1) << 40));
    assert_eq!(f[0].load(Ordering::Relaxed), 0.5 * n as f32);
    assert_eq!(f[1].load(Ordering::Relaxed), (n - 1) as f32);
    // `fetch_min` ignores NaN (fmin): the smallest number wins.
    assert_eq!(f[2].load(Ordering::Relaxed), 1.0);
    assert_eq!(d[0].load(Ordering::Relaxed), 0.25 * f64::from(n));
    // `fetch_max_nan` propagates NaN.
    assert!(d[1].load(Ordering::Relaxed).is_nan());
}

/// Every thread takes the mutex and does a non-atomic read-modify-write under it.
#[kernel]
pub fn mutex_add_one(mutex: &[Mutex], x: &[AtomicU32], spin: u32) {
    let _guard = if spin != 0 { mutex[0].lock_spin() } else { mutex[0].lock() };
    let v = x[0].load(Ordering::Relaxed);
    // Let the other threads of the block run while the lock is held.
    cohort::raw::nanosleep(100);
    x[0].store(v + 1, Ordering::Relaxed);
}

#[test]
fn mutex_serializes_threads() {
    for spin in [0, 1] {
        // SAFETY: on the CPU device the mutex's word is host memory, used atomically.
        let m = vec![unsafe { Mutex::new() }];
        let x = atomics::<u32, cohort::atomic::Global>(&[0]);
        launch(&LaunchSpec::new(8u32, 64u32), &|| __cohort_kernel_mutex_add_one(&m, &x, spin)).unwrap();
        assert_eq!(x[0].load(Ordering::Relaxed), 8 * 64, "spin {spin}");
    }
}
