//! Memory fences (`fence.sc`, `fence.acq_rel`; PTX ISA §"Membar/Fence"), one function per
//! scope, and the two that take the [`Scope`] as a value.

#[cfg(target_arch = "nvptx64")]
use core::arch::asm;

use super::Scope;
use crate::host::on_device;

macro_rules! fence {
    ($($(#[$m:meta])* $name:ident => $ins:literal;)*) => {$(
        $(#[$m])*
        #[inline(always)]
        pub fn $name() {
            on_device!(stringify!($name) => {
                // SAFETY: a fence only orders this thread's memory accesses.
                unsafe { asm!($ins, options(nostack)) }
            } host => { core::sync::atomic::fence(core::sync::atomic::Ordering::SeqCst) })
        }
    )*};
}

fence! {
    /// `fence.sc.cta`: sequentially consistent fence among the block's threads
    /// (`__threadfence_block()`).
    fence_sc_cta => "fence.sc.cta;";
    /// `fence.sc.gpu`: sequentially consistent fence at device scope (`__threadfence()`).
    fence_sc_gpu => "fence.sc.gpu;";
    /// `fence.sc.sys`: sequentially consistent fence at system scope (`__threadfence_system()`).
    fence_sc_sys => "fence.sc.sys;";
    /// `fence.acq_rel.cta`: acquire-release fence at block scope.
    fence_acq_rel_cta => "fence.acq_rel.cta;";
    /// `fence.acq_rel.gpu`: acquire-release fence at device scope.
    fence_acq_rel_gpu => "fence.acq_rel.gpu;";
    /// `fence.acq_rel.sys`: acquire-release fence at system scope.
    fence_acq_rel_sys => "fence.acq_rel.sys;";
}

/// `fence.sc.{cta,gpu,sys}`: a sequentially consistent fence at `scope`.
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub fn fence_sc(scope: Scope) {
    match scope {
        Scope::Block => fence_sc_cta(),
        Scope::Device => fence_sc_gpu(),
        Scope::System => fence_sc_sys(),
    }
}

/// `fence.acq_rel.{cta,gpu,sys}`: an acquire-release fence at `scope`.
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub fn fence_acq_rel(scope: Scope) {
    match scope {
        Scope::Block => fence_acq_rel_cta(),
        Scope::Device => fence_acq_rel_gpu(),
        Scope::System => fence_acq_rel_sys(),
    }
}
