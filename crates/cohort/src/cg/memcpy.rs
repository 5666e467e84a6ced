//! `cg::memcpy_async`, `cg::wait`, `cg::wait_prior`: a group copies global memory into shared
//! memory in the background with `cp.async` (sm_80+), using the widest form (16, 8 or 4
//! bytes per instruction) the addresses and the length allow; below sm_80 the copy is done
//! synchronously and `wait` only synchronizes the group.

use super::ThreadGroup;
use crate::DeviceCopy;
use crate::shared::SharedSlice;

/// `cg::memcpy_async(group, dst, src, bytes)`: the members of `group` copy `src` into the first
/// `src.len()` elements of `dst`, splitting the work among themselves. The copy is in flight
/// until [`wait`] (or [`wait_prior`]); every member must call this with the same arguments.
///
/// # Panics
/// If `dst` is shorter than `src`.
#[inline(always)]
#[track_caller]
pub fn memcpy_async<G: ThreadGroup, T: DeviceCopy>(group: &G, dst: SharedSlice<T>, src: &[T]) {
    assert!(dst.len() >= src.len(), "memcpy_async: destination shorter than source");
    let bytes = core::mem::size_of_val(src) as u64;
    let rank: u64 = group.thread_rank().into();
    let n: u64 = group.num_threads().into();
    copy(dst.shared_addr(), src.as_ptr() as u64, bytes, rank, n);
}

#[inline(always)]
fn copy(d: u32, s: u64, bytes: u64, rank: u64, n: u64) {
    crate::host::on_device!("memcpy_async" => {
        let a = d as u64 | s | bytes;
        let chunk = if a % 16 == 0 { 16 } else if a % 8 == 0 { 8 } else if a % 4 == 0 { 4 } else { 1 };
        let count = bytes / chunk;
        let mut i = rank;
        while i < count {
            let (dd, ss) = (d + (i * chunk) as u32, s + i * chunk);
            // SAFETY: `dd` is inside `dst` and `ss` inside `src` (both checked lengths).
            unsafe { copy_chunk(dd, ss, chunk) };
            i += n;
        }
        #[cfg(target_feature = "sm_80")]
        // SAFETY: closes this thread's group of copies (possibly empty, so that every thread
        // counts groups alike).
        unsafe {
            core::arch::asm!("cp.async.commit_group;", options(nostack))
        };
    })
}

#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn copy_chunk(d: u32, s: u64, chunk: u64) {
    use core::arch::asm;
    #[cfg(target_feature = "sm_80")]
    // SAFETY: valid shared and global addresses, aligned to `chunk` (the caller picked it).
    unsafe {
        match chunk {
            16 => {
                asm!("{{ .reg .b64 %cohort_g; cvta.to.global.u64 %cohort_g, {1}; cp.async.cg.shared.global [{0}], [%cohort_g], 16; }}", in(reg32) d, in(reg64) s, options(nostack))
            }
            8 => {
                asm!("{{ .reg .b64 %cohort_g; cvta.to.global.u64 %cohort_g, {1}; cp.async.ca.shared.global [{0}], [%cohort_g], 8; }}", in(reg32) d, in(reg64) s, options(nostack))
            }
            4 => {
                asm!("{{ .reg .b64 %cohort_g; cvta.to.global.u64 %cohort_g, {1}; cp.async.ca.shared.global [{0}], [%cohort_g], 4; }}", in(reg32) d, in(reg64) s, options(nostack))
            }
            _ => {
                let v: u16;
                asm!("ld.u8 {0}, [{1}];", out(reg16) v, in(reg64) s, options(readonly, nostack));
                asm!("st.shared.u8 [{0}], {1};", in(reg32) d, in(reg16) v, options(nostack));
            }
        }
    }
    #[cfg(not(target_feature = "sm_80"))]
    // SAFETY: as above, copied synchronously word by word.
    unsafe {
        let mut o = 0;
        while o < chunk {
            if chunk % 4 == 0 {
                let v: u32;
                asm!("ld.u32 {0}, [{1}];", out(reg32) v, in(reg64) s + o, options(readonly, nostack));
                asm!("st.shared.u32 [{0}], {1};", in(reg32) d + o as u32, in(reg32) v, options(nostack));
                o += 4;
            } else {
                let v: u16;
                asm!("ld.u8 {0}, [{1}];", out(reg16) v, in(reg64) s + o, options(readonly, nostack));
                asm!("st.shared.u8 [{0}], {1};", in(reg32) d + o as u32, in(reg16) v, options(nostack));
                o += 1;
            }
        }
    }
}

/// `cg::wait(group)`: waits for all of this thread's outstanding `memcpy_async` copies, then
/// synchronizes `group` so every member sees every member's copies.
#[inline(always)]
pub fn wait<G: ThreadGroup>(group: &G) {
    crate::host::on_device!("wait" => {
        #[cfg(target_feature = "sm_80")]
        // SAFETY: waiting has no preconditions.
        unsafe {
            core::arch::asm!("cp.async.wait_all;", options(nostack))
        };
        group.sync()
    })
}

/// `cg::wait_prior<N>(group)`: waits until at most the `N` most recent `memcpy_async` batches
/// of this thread are still in flight, then synchronizes `group`.
#[inline(always)]
pub fn wait_prior<const N: u32, G: ThreadGroup>(group: &G) {
    crate::host::on_device!("wait_prior" => {
        #[cfg(target_feature = "sm_80")]
        // SAFETY: waiting has no preconditions.
        unsafe {
            core::arch::asm!("cp.async.wait_group {n};", n = const N, options(nostack))
        };
        group.sync()
    })
}
