//! Helpers shared by the engine's tests.
#![allow(dead_code)]

use std::sync::atomic::{AtomicU64, Ordering};

/// A global-memory array the kernel writes and the test reads back.
pub struct Out(Vec<AtomicU64>);

impl Out {
    pub fn new(n: usize) -> Self {
        Self((0..n).map(|_| AtomicU64::new(u64::MAX)).collect())
    }
    pub fn set(&self, i: u64, v: u64) {
        self.0[i as usize].store(v, Ordering::Relaxed);
    }
    pub fn get(&self, i: u64) -> u64 {
        self.0[i as usize].load(Ordering::Relaxed)
    }
    pub fn add(&self, i: u64, v: u64) {
        self.0[i as usize].fetch_add(v, Ordering::Relaxed);
    }
    pub fn to_vec(&self) -> Vec<u64> {
        self.0.iter().map(|a| a.load(Ordering::Relaxed)).collect()
    }
}

/// Deterministic pseudo-random numbers (splitmix64).
pub fn rand(i: u64, seed: u64) -> u64 {
    let mut z = i.wrapping_add(seed).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// A pointer to shared address `off` of the running block, as `T`.
pub fn smem<T>(off: u32) -> *mut T {
    cohort_cpu::shared_window().wrapping_add(off as usize).cast()
}
