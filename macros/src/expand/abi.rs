//! The ABI record of a kernel instance (`cohort::abi`): written into the PTX module as the
//! global `__cohort_abi_<entry>` (the device side's view) and into the launcher as `ABI` (the
//! host side's), which `load()` compares with each other and with the entry's `.param` list.

use proc_macro2::TokenStream;
use quote::{format_ident, quote};

use super::{Instance, Kernel};

/// The record's expression: the flags, the block shape a `BlockShape` parameter requires, and
/// each parameter's entries (`KernelParam::ABI`, one per PTX part), in order.
pub(super) fn record(k: &Kernel<'_>, inst: &Instance) -> TokenStream {
    let tys = &inst.tys;
    let flags = k.flags();
    let n = inst.part_total();
    quote! {
        ::cohort::abi::abi_record_of::<{ ::cohort::abi::abi_len(#n) }>(
            #flags,
            ::cohort::abi::record_shape(&[#(<#tys as ::cohort::abi::KernelParam>::SHAPE),*]),
            &[#(<#tys as ::cohort::abi::KernelParam>::ABI),*],
        )
    }
}

/// The device half of the record: a global `__cohort_abi_<entry>` in the PTX module, which the
/// host runtime compares with the launcher's own record at `load()`.
pub(super) fn device_global(k: &Kernel<'_>, inst: &Instance, abi: &TokenStream) -> TokenStream {
    let cfgs = &k.cfgs;
    let sym = format_ident!("__cohort_abi_{}", inst.entry);
    quote! {
        #(#cfgs)*
        #[cfg(target_arch = "nvptx64")]
        #[unsafe(no_mangle)]
        #[used]
        #[doc(hidden)]
        #[allow(non_upper_case_globals)]
        pub static #sym: [u8; #abi.len()] = #abi;
    }
}
