//! Atomics: every operation for every type in global and shared memory, scopes and orderings,
//! NaN in every float CAS loop, mutexes, message passing with acquire/release and with fences.

#![allow(missing_docs)] // test scaffolding: the trait methods only rename the atomics API

use cohort::atomic;
use cohort::atomic::{Atomic, Generic, Ordering, Scope, Shared};
use cohort::mutex::Mutex;
use cohort::prelude::*;
use cohort::sync;

/// Cells per integer/float test.
pub const CELLS: usize = 16;

/// What an integer atomic test does to its cells, per thread `i` with operand `v` (see
/// [`int_ops`]): returns each operation's previous value where it has one.
#[inline(always)]
fn int_script<T, S: cohort::atomic::Space>(c: &[Atomic<T, S>], v: T, one: T, limit: T) -> [T; CELLS]
where
    T: Copy + Default,
    Atomic<T, S>: IntOps<T>,
{
    let mut olds = [T::default(); CELLS];
    olds[0] = c[0].fetch_add_(one);
    olds[1] = c[1].fetch_add_(v);
    olds[2] = c[2].fetch_sub_(v);
    olds[3] = c[3].fetch_min_(v);
    olds[4] = c[4].fetch_max_(v);
    olds[5] = c[5].fetch_and_(v);
    olds[6] = c[6].fetch_or_(v);
    olds[7] = c[7].fetch_xor_(v);
    olds[8] = c[8].fetch_inc_(limit);
    olds[9] = c[9].fetch_dec_(limit);
    olds[10] = c[10].swap_(v);
    olds[11] = c[11].cas_increment(one);
    olds[12] = c[12].update_affine();
    c[13].add_(one);
    olds[14] = c[14].fetch_add_seq_cst_system(one);
    olds[15] = c[15].load_store_release(v);
    olds
}

/// The integer operations, named so one script serves every type.
pub trait IntOps<T> {
    fn fetch_add_(&self, v: T) -> T;
    fn fetch_sub_(&self, v: T) -> T;
    fn fetch_min_(&self, v: T) -> T;
    fn fetch_max_(&self, v: T) -> T;
    fn fetch_and_(&self, v: T) -> T;
    fn fetch_or_(&self, v: T) -> T;
    fn fetch_xor_(&self, v: T) -> T;
    fn fetch_inc_(&self, limit: T) -> T;
    fn fetch_dec_(&self, limit: T) -> T;
    fn swap_(&self, v: T) -> T;
    fn cas_increment(&self, one: T) -> T;
    fn update_affine(&self) -> T;
    fn add_(&self, v: T);
    fn fetch_add_seq_cst_system(&self, v: T) -> T;
    fn load_store_release(&self, v: T) -> T;
}

macro_rules! int_ops_impl {
    ($($t:ty)*) => {$(
        impl<S: cohort::atomic::Space> IntOps<$t> for Atomic<$t, S> {
            #[inline(always)] fn fetch_add_(&self, v: $t) -> $t { self.fetch_add(v, Ordering::Relaxed) }
            #[inline(always)] fn fetch_sub_(&self, v: $t) -> $t { self.fetch_sub(v, Ordering::AcqRel) }
            #[inline(always)] fn fetch_min_(&self, v: $t) -> $t { self.fetch_min(v, Ordering::Relaxed) }
            #[inline(always)] fn fetch_max_(&self, v: $t) -> $t { self.fetch_max(v, Ordering::Release) }
            #[inline(always)] fn fetch_and_(&self, v: $t) -> $t { self.fetch_and(v, Ordering::Acquire) }
            #[inline(always)] fn fetch_or_(&self, v: $t) -> $t { self.fetch_or(v, Ordering::Relaxed) }
            #[inline(always)] fn fetch_xor_(&self, v: $t) -> $t { self.fetch_xor(v, Ordering::SeqCst) }
            #[inline(always)] fn fetch_inc_(&self, limit: $t) -> $t { self.fetch_inc(limit, Ordering::Relaxed) }
            #[inline(always)] fn fetch_dec_(&self, limit: $t) -> $t { self.fetch_dec(limit, Ordering::Relaxed) }
            #[inline(always)] fn swap_(&self, v: $t) -> $t { self.swap(v, Ordering::AcqRel) }
            #[inline(always)]
            fn cas_increment(&self, one: $t) -> $t {
                let mut cur = self.load(Ordering::Relaxed);
                loop {
                    match self.compare_exchange(cur, cur.wrapping_add(one), Ordering::AcqRel, Ordering::Relaxed) {
                        Ok(prev) => return prev,
                        Err(actual) => cur = actual,
                    }
                }
            }
            #[inline(always)]
            fn update_affine(&self) -> $t {
                match self.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |x| Some(x.wrapping_mul(3).wrapping_add(1))) {
                    Ok(p) | Err(p) => p,
                }
            }
            #[inline(always)] fn add_(&self, v: $t) { self.add(v, Ordering::Relaxed) }
            #[inline(always)] fn fetch_add_seq_cst_system(&self, v: $t) -> $t { self.fetch_add_scoped(v, Ordering::SeqCst, Scope::System) }
            #[inline(always)]
            fn load_store_release(&self, v: $t) -> $t {
                let before = self.load(Ordering::Acquire);
                self.store(v, Ordering::Release);
                before
            }
        }
    )*};
}
int_ops_impl!(u32 i32 u64 i64);

/// Every integer operation on global cells: `olds[i]` gets each operation's previous value.
/// `cells` holds [`CELLS`] values set by the host.
#[kernel(instances(u32, i32, u64, i64))]
pub fn int_ops<T: DeviceCopy + Default>(vals: &[T], limit: T, cells: &[Atomic<T>], mut olds: DisjointSlice<[T; CELLS]>)
where
    Atomic<T>: IntOps<T>,
{
    let i = thread::index_1d();
    if *i < vals.len() {
        let one = one::<T>();
        let r = int_script(cells, vals[*i], one, limit);
        olds.set(&i, r);
    }
}

/// As [`int_ops`] on shared-memory cells (block scope); block `b`'s final values go to
/// `finals[b]`, initialized from `init`.
#[kernel(instances(u32, i32, u64, i64))]
pub fn int_ops_shared<T: DeviceCopy + Default>(
    vals: &[T],
    limit: T,
    init: &[T],
    mut olds: DisjointSlice<[T; CELLS]>,
    mut finals: DisjointSlice<[T; CELLS]>,
) where
    Atomic<T, Shared>: IntOps<T>,
{
    let i = thread::index_1d();
    let block = cg::this_thread_block();
    let cells = cohort::shared::dynamic::<T>();
    let t = block.thread_rank() as usize;
    if t < CELLS {
        cells.store(t, init[t]);
    }
    block.sync();
    assert!(cells.len() >= CELLS, "int_ops_shared needs CELLS elements of dynamic shared memory");
    // SAFETY: the first CELLS elements of dynamic shared memory are consecutive `T`s (checked
    // above); as atomics they are only touched atomically from here on.
    let slice: &[Atomic<T, Shared>] =
        unsafe { core::slice::from_raw_parts(cells.atomic(0) as *const Atomic<T, Shared>, CELLS) };
    let r = int_script(slice, vals[*i], one::<T>(), limit);
    olds.set(&i, r);
    block.sync();
    if t == 0 {
        let mut f = [T::default(); CELLS];
        for (k, x) in f.iter_mut().enumerate() {
            *x = cells.load(k);
        }
        // SAFETY: only thread 0 of block b writes element b.
        unsafe { *finals.get_unchecked_mut(thread::block_idx_x() as usize) = f };
    }
}

#[inline(always)]
fn one<T: DeviceCopy + Default>() -> T {
    // 1 of the integer type, from its little-endian bytes.
    let mut v = T::default();
    // SAFETY: writes the lowest byte of a `DeviceCopy` integer, which stays a valid value.
    unsafe { (&mut v as *mut T as *mut u8).write(1) };
    v
}

/// Float operations on global cells (see the host test for what each cell checks):
/// `olds[i][k]` previous values. `vals` are finite; `nan_vals` contain NaNs (fed to the
/// min/max CAS loops, which must still finish).
#[kernel(instances(f32, f64))]
pub fn float_ops<T: DeviceCopy + Default>(
    vals: &[T],
    nan_vals: &[T],
    cells: &[Atomic<T>],
    mut olds: DisjointSlice<[T; 12]>,
) where
    Atomic<T>: FloatOps<T>,
{
    let i = thread::index_1d();
    if *i < vals.len() {
        let (v, nv) = (vals[*i], nan_vals[*i]);
        let c = cells;
        olds.set(
            &i,
            [
                c[0].fadd(v),
                c[1].fsub(v),
                c[2].fmin(nv),
                c[3].fmax(nv),
                c[4].fmin_nan(nv),
                c[5].fmax_nan(nv),
                c[6].fswap(v),
                c[7].fcas_add(v),
                c[8].fupdate_identity(),
                c[9].fmin(nv),
                c[10].fmax_nan(nv),
                {
                    c[11].fred(v);
                    T::default()
                },
            ],
        );
    }
}

/// The float operations, named so one kernel serves both types.
pub trait FloatOps<T> {
    fn fadd(&self, v: T) -> T;
    fn fsub(&self, v: T) -> T;
    fn fmin(&self, v: T) -> T;
    fn fmax(&self, v: T) -> T;
    fn fmin_nan(&self, v: T) -> T;
    fn fmax_nan(&self, v: T) -> T;
    fn fswap(&self, v: T) -> T;
    fn fcas_add(&self, v: T) -> T;
    fn fupdate_identity(&self) -> T;
    fn fred(&self, v: T);
}

macro_rules! float_ops_impl {
    ($($t:ty)*) => {$(
        impl FloatOps<$t> for Atomic<$t> {
            #[inline(always)] fn fadd(&self, v: $t) -> $t { self.fetch_add(v, Ordering::Relaxed) }
            #[inline(always)] fn fsub(&self, v: $t) -> $t { self.fetch_sub(v, Ordering::AcqRel) }
            #[inline(always)] fn fmin(&self, v: $t) -> $t { self.fetch_min(v, Ordering::Relaxed) }
            #[inline(always)] fn fmax(&self, v: $t) -> $t { self.fetch_max(v, Ordering::SeqCst) }
            #[inline(always)] fn fmin_nan(&self, v: $t) -> $t { self.fetch_min_nan(v, Ordering::Relaxed) }
            #[inline(always)] fn fmax_nan(&self, v: $t) -> $t { self.fetch_max_nan(v, Ordering::Relaxed) }
            #[inline(always)] fn fswap(&self, v: $t) -> $t { self.swap(v, Ordering::Relaxed) }
            #[inline(always)]
            fn fcas_add(&self, v: $t) -> $t {
                let mut cur = self.load(Ordering::Relaxed);
                loop {
                    match self.compare_exchange(cur, cur + v, Ordering::Relaxed, Ordering::Relaxed) {
                        Ok(p) => return p,
                        Err(a) => cur = a,
                    }
                }
            }
            #[inline(always)]
            fn fupdate_identity(&self) -> $t {
                match self.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |x| Some(x)) {
                    Ok(p) | Err(p) => p,
                }
            }
            #[inline(always)] fn fred(&self, v: $t) { self.add(v, Ordering::Relaxed) }
        }
    )*};
}
float_ops_impl!(f32 f64);

/// Every thread of the grid increments `counter[0]` inside a global mutex (`spin` selects
/// `lock_spin`), and every thread of each block increments its block's shared counter inside a
/// shared mutex; `per_block[b]` gets that count. `tries[0]` counts successful `try_lock`s on
/// `held`, a mutex the host set to locked.
#[kernel]
pub fn mutex_counters(
    spin: u32,
    lock: &[Mutex],
    counter: &[AtomicU32],
    held: &[Mutex],
    tries: &[AtomicU32],
    mut per_block: DisjointSlice<u32>,
) {
    {
        let _g = if spin == 1 { lock[0].lock_spin() } else { lock[0].lock() };
        let v = counter[0].load(Ordering::Relaxed);
        counter[0].store(v + 1, Ordering::Relaxed);
    }
    if held[0].try_lock().is_some() {
        tries[0].add(1, Ordering::Relaxed);
    }
    let block = cg::this_thread_block();
    let cells = SHARED_LOCK.get();
    if block.thread_rank() == 0 {
        cells.store(0, 0);
        cells.store(1, 0);
    }
    block.sync();
    {
        let m: &Mutex<Shared> = Mutex::from_atomic(cells.atomic(0));
        let _g = m.lock();
        let c = cells.atomic(1);
        let v = c.load_scoped(Ordering::Relaxed, Scope::Block);
        c.store_scoped(v + 1, Ordering::Relaxed, Scope::Block);
    }
    block.sync();
    if block.thread_rank() == 0 {
        // SAFETY: only thread 0 of block b writes element b.
        unsafe { *per_block.get_unchecked_mut(thread::block_idx_x() as usize) = cells.load(1) };
    }
}

cohort::shared! {
    static SHARED_LOCK: [u32; 2];
}

/// Message passing between blocks (launched cooperatively, so every block is resident and
/// the consumers' spinning cannot starve their producers): block `2p` writes `data[p * 64 .. +64]` with relaxed
/// stores and publishes `flags[p]`; block `2p + 1` waits for it and copies what it sees to
/// `seen`. `mode` 0 uses release/acquire on the flag, 1 relaxed flag with `fence_acq_rel` at
/// device scope on both sides, 2 `fence_device` (`__threadfence`) on both sides.
#[kernel(cooperative)]
pub fn message_passing(mode: u32, round: u32, data: &[AtomicU32], flags: &[AtomicU32], mut seen: DisjointSlice<u32>) {
    let b = thread::block_idx_x();
    let pair = (b / 2) as usize;
    let t = thread::thread_idx_x() as usize;
    if b % 2 == 0 {
        data[pair * 64 + t].store(round * 1000 + t as u32, Ordering::Relaxed);
        sync::sync_threads();
        if t == 0 {
            match mode {
                0 => flags[pair].store(round, Ordering::Release),
                1 => {
                    sync::fence_acq_rel(Scope::Device);
                    flags[pair].store(round, Ordering::Relaxed);
                }
                _ => {
                    sync::fence_device();
                    flags[pair].store(round, Ordering::Relaxed);
                }
            }
        }
    } else {
        if t == 0 {
            match mode {
                0 => while flags[pair].load(Ordering::Acquire) != round {},
                1 => {
                    while flags[pair].load(Ordering::Relaxed) != round {}
                    sync::fence_acq_rel(Scope::Device);
                }
                _ => {
                    while flags[pair].load(Ordering::Relaxed) != round {}
                    sync::fence_device();
                }
            }
        }
        sync::sync_threads();
        let v = data[pair * 64 + t].load(Ordering::Relaxed);
        // SAFETY: thread t of consumer block 2p+1 alone writes element p * 64 + t.
        unsafe { *seen.get_unchecked_mut(pair * 64 + t) = v };
    }
}

/// A fixed set of atomic forms, for the PTX golden test (and run once to make sure each
/// executes): `cells` has 8 `u32`, `wide` 2 `u64`, `floats` 2 `f32`.
#[kernel]
pub fn atomic_forms(cells: &[AtomicU32], wide: &[AtomicU64], floats: &[AtomicF32], mut out: DisjointSlice<u32>) {
    let i = thread::index_1d();
    let mut acc = 0u32;
    acc = acc.wrapping_add(cells[0].fetch_add(1, Ordering::Relaxed));
    acc = acc.wrapping_add(cells[1].fetch_add(1, Ordering::Acquire));
    acc = acc.wrapping_add(cells[2].fetch_add(1, Ordering::Release));
    acc = acc.wrapping_add(cells[3].fetch_add(1, Ordering::AcqRel));
    acc = acc.wrapping_add(cells[4].fetch_add(1, Ordering::SeqCst));
    acc = acc.wrapping_add(cells[5].fetch_add_scoped(1, Ordering::Relaxed, Scope::System));
    acc = acc.wrapping_add(cells[6].load(Ordering::Acquire));
    cells[7].store(acc, Ordering::Release);
    acc = acc.wrapping_add(wide[0].fetch_max(acc as u64, Ordering::Relaxed) as u32);
    acc = acc.wrapping_add(wide[1].fetch_min(acc as u64, Ordering::Relaxed) as u32);
    acc = acc.wrapping_add(floats[0].fetch_add(1.0, Ordering::Relaxed) as u32);
    floats[1].add(1.0, Ordering::Relaxed);
    sync::fence(Scope::Block);
    sync::fence_acq_rel(Scope::Device);
    sync::fence_system();
    let generic: &Atomic<u32, Generic> =
        // SAFETY: `cells[0]` is a valid `u32` in global memory, which generic addressing covers.
        unsafe { Atomic::from_ptr(cells[0].as_ptr()) };
    acc = acc.wrapping_add(generic.load(Ordering::Relaxed));
    out.set(&i, acc);
}

/// CUDA C++'s `atomicInc((unsigned*)&counts[0], limit)` on an `int` array, and the other casts:
/// `signed[0]` takes the native unsigned `atom.inc` through [`atomic::flip_sign`], `signed[1]`
/// an unsigned `fetch_max` through `as_unsigned` (so -7 stays the maximum), `unsigned[0]` a
/// signed `fetch_min` of `-i` and `unsigned[1]` a signed `fetch_add(-1)`.
#[kernel]
pub fn sign_views(signed: &[AtomicI32], unsigned: &[AtomicU32], limit: u32) {
    let i = thread::index_1d().get() as u32;
    atomic::flip_sign(signed)[0].fetch_inc(limit, Ordering::Relaxed);
    signed[1].as_unsigned().fetch_max(i, Ordering::Relaxed);
    atomic::flip_sign(unsigned)[0].fetch_min(-(i as i32), Ordering::Relaxed);
    unsigned[1].as_signed().fetch_add(-1, Ordering::Relaxed);
}

/// The 64-bit casts: `wide[0]` (an `i64`) an unsigned `fetch_max` of `i` through
/// [`atomic::flip_sign`] (so -3 stays the maximum), `wide[1]` a signed `fetch_min` through
/// `as_unsigned().as_signed()` (the round trip is the same atomic).
#[kernel]
pub fn sign_views_64(wide: &[AtomicI64]) {
    let i = thread::index_1d().get() as u64;
    let unsigned: &[AtomicU64] = atomic::flip_sign(wide);
    unsigned[0].fetch_max(i, Ordering::Relaxed);
    wide[1].as_unsigned().as_signed().fetch_min(-(i as i64), Ordering::Relaxed);
}
