//! A spin lock for kernels, in global or shared memory (the Numba "atomics and mutex" model,
//! done with the orderings CUDA's memory model asks for).
//!
//! | CUDA C++ / Numba | Cohort |
//! |---|---|
//! | `while (atomicCAS(m, 0, 1) != 0);` then `__threadfence()` | [`Mutex::lock`] (CAS with **acquire**) |
//! | `__threadfence(); atomicExch(m, 0);` | dropping the [`MutexGuard`] (store with **release**) |
//! | `if (atomicCAS(m, 0, 1) == 0)` | [`Mutex::try_lock`] |
//! | `__nanosleep` backoff | [`Mutex::lock`] backs off exponentially (8 ns to 256 ns, the CUDA Programming Guide's `__nanosleep` mutex); [`Mutex::lock_spin`] does not |
//!
//! Acquire on lock and release on unlock are exactly what makes the data touched inside the
//! critical section visible to the next holder (the tutorial's `threadfence` calls approximate
//! this with two full fences). A `Mutex<Global>` synchronizes at device scope, a
//! `Mutex<Shared>` at block scope.
//!
//! **Which threads may contend.** On sm_70 and newer (independent thread scheduling), lanes of
//! one warp may all call `lock`: the lanes that lose keep spinning while the winner proceeds
//! and unlocks, so the warp cannot deadlock itself. (Before Volta it would.) Still, every
//! contender costs an atomic per attempt; the recommended pattern is one contender per warp or
//! per block: reduce inside the group first, then let its leader take the lock.
//!
//! The lock protects data by convention, as in CUDA: access the protected data only while the
//! guard lives, through atomics (relaxed is enough; the lock orders them) or raw pointers.

use core::marker::PhantomData;

use crate::atomic::{Atomic, Global, Ordering, Space};
use crate::sync::Scope;

/// A spin lock: 0 when free, 1 when held. Layout: one `u32` (a `&[Mutex]` kernel parameter
/// is passed from the host as `&mut DeviceBuffer<u32>` of zeros).
#[repr(transparent)]
#[derive(Debug)]
pub struct Mutex<S: Space = Global> {
    state: Atomic<u32, S>,
}

/// Holds a [`Mutex`]; unlocks (release) when dropped.
#[derive(Debug)]
#[must_use = "dropping the guard unlocks the mutex at once"]
pub struct MutexGuard<'a, S: Space = Global> {
    mutex: &'a Mutex<S>,
    _not_send: PhantomData<*const ()>,
}

impl<S: Space> Mutex<S> {
    /// An unlocked mutex.
    ///
    /// # Safety
    /// As [`Atomic::new`]: the mutex must live in memory of space `S` (a device `static` for
    /// `Global`; never a local variable). Kernels get mutexes safely as a `&[Mutex]` parameter
    /// (global memory) or from shared memory ([`Mutex::from_atomic`] of a
    /// [`SharedSlice::atomic`](crate::shared::SharedSlice::atomic)).
    #[must_use]
    pub const unsafe fn new() -> Self {
        // SAFETY: forwarded to the caller.
        Self { state: unsafe { Atomic::new(0) } }
    }

    /// Views a `u32` atomic (0 = free) as a mutex.
    #[must_use]
    pub fn from_atomic(a: &Atomic<u32, S>) -> &Self {
        // SAFETY: `Mutex<S>` is `repr(transparent)` over `Atomic<u32, S>`.
        unsafe { &*(a as *const Atomic<u32, S> as *const Self) }
    }

    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    fn scope() -> Scope {
        S::DEFAULT_SCOPE
    }

    /// Takes the lock if it is free (`atom.cas` with acquire ordering).
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    pub fn try_lock(&self) -> Option<MutexGuard<'_, S>> {
        self.state
            .compare_exchange_scoped(0, 1, Ordering::Acquire, Ordering::Relaxed, Self::scope())
            .ok()
            .map(|_| MutexGuard { mutex: self, _not_send: PhantomData })
    }

    /// Takes the lock, spinning with exponential backoff (`nanosleep`, 8 ns doubling to
    /// 256 ns, as in the CUDA Programming Guide's mutex example) between attempts.
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    pub fn lock(&self) -> MutexGuard<'_, S> {
        let mut wait = 8;
        loop {
            if let Some(g) = self.try_lock() {
                return g;
            }
            // Wait for it to look free before trying again (reads are cheaper than CAS).
            while self.state.load_scoped(Ordering::Relaxed, Self::scope()) != 0 {
                crate::raw::nanosleep(wait);
                wait = (wait * 2).min(256);
            }
        }
    }

    /// Takes the lock, spinning without sleeping.
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    pub fn lock_spin(&self) -> MutexGuard<'_, S> {
        loop {
            if let Some(g) = self.try_lock() {
                return g;
            }
            // On the CPU device a block's threads take turns only at barriers and yields: let
            // the holder run.
            #[cfg(not(target_arch = "nvptx64"))]
            cohort_cpu::yield_now();
        }
    }

    /// Releases the lock (store with release ordering).
    ///
    /// # Safety
    /// The calling thread holds the lock (and forgot its guard).
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    pub unsafe fn force_unlock(&self) {
        self.state.store_scoped(0, Ordering::Release, Self::scope());
    }

    /// Whether the lock is held by someone (a racy snapshot).
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    #[must_use]
    pub fn is_locked(&self) -> bool {
        self.state.load_scoped(Ordering::Relaxed, Self::scope()) != 0
    }
}

impl<S: Space> Drop for MutexGuard<'_, S> {
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    fn drop(&mut self) {
        // SAFETY: the guard proves this thread holds the lock.
        unsafe { self.mutex.force_unlock() }
    }
}
