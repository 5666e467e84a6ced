//! The PTX entry of a kernel instance, and what it shares with the CPU device's entry: the
//! parameter list (each kernel parameter's PTX parts) and the call of the body.

use proc_macro2::TokenStream;
use quote::{format_ident, quote, quote_spanned};
use syn::spanned::Spanned;

use super::{Instance, Kernel};

/// The entry's slots of parameter `id`: one per possible PTX part (`cohort::abi::MAX_PARTS`);
/// the slots past its kind's parts are `()`, which rustc leaves out of the entry.
const SLOTS: usize = 8;

/// The names of parameter `id`'s slots.
fn slot_idents(id: &syn::Ident) -> Vec<syn::Ident> {
    (0..SLOTS).map(|j| format_ident!("__cohort_{}_{}", id, j)).collect()
}

/// The call of the kernel body with the rebuilt arguments (named as the kernel's parameters).
pub(super) fn body_call(k: &Kernel<'_>, inst: &Instance) -> TokenStream {
    let body = &k.body_ident;
    let generics = &inst.call_generics;
    let args = k.params.iter().map(|p| &p.ident);
    if k.item.sig.unsafety.is_some() {
        quote! {
            // SAFETY: the caller of the `unsafe` launcher took on the kernel's contract.
            unsafe { #body #generics (#(#args),*) }
        }
    } else {
        quote!(#body #generics (#(#args),*))
    }
}

/// The call of the body followed, in a `#[kernel(cluster)]` kernel, by the cluster exit protocol
/// (`cohort::cg::cluster`): reached by every thread that returns from the body, wherever it
/// returns, so no block leaves while another may still access its shared memory.
///
/// Around the body, every kernel's threads enter and leave the split-phase barriers' bookkeeping
/// (`cohort::cg::split`: in checked mode the pending bits are cleared at entry and checked when
/// the thread leaves; nothing in release builds on a GPU).
pub(super) fn cluster_bracket(k: &Kernel<'_>, call: TokenStream) -> TokenStream {
    let call = quote! {
        ::cohort::cg::split::__thread_enter();
        #call;
        ::cohort::cg::split::__thread_exit();
    };
    if k.cluster {
        quote! {
            #call
            ::cohort::cg::cluster::__cluster_exit();
        }
    } else {
        call
    }
}

/// The PTX entry of a kernel instance: `extern "ptx-kernel"`, its parameters each kernel
/// parameter's PTX parts, in order. It checks the parameter types (at compile time), rebuilds
/// each argument from its parts (`KernelParam::rebuild`) and calls the body. A `dependent`
/// kernel's entry first waits for its programmatic prerequisites (`griddepcontrol.wait`, sm_90),
/// before any argument is rebuilt or any of its body runs: the host may then launch it before
/// the kernel ahead of it on the stream has finished.
pub(super) fn device_entry(k: &Kernel<'_>, inst: &Instance) -> TokenStream {
    let (cfgs, entry) = (&k.cfgs, &inst.entry);
    let mut lowered = Vec::new();
    let mut checks = Vec::new();
    let mut rebuild = Vec::new();
    for (p, ty) in k.params.iter().zip(&inst.tys) {
        let id = &p.ident;
        let slots = slot_idents(id);
        for (j, s) in slots.iter().enumerate() {
            let slot_ty = format_ident!("Slot{}", j);
            lowered.push(quote!(#s: ::cohort::abi::#slot_ty<#ty>));
        }
        checks.push(quote_spanned!(p.ty.span()=> ::cohort::abi::check_param::<#ty>();));
        rebuild.push(quote! {
            // SAFETY: the host launcher (or the parent's device launcher) passed what the
            // parameter's kind requires, under the launch checks its ABI record asked for
            // (`KernelParam::rebuild` of the kind says which).
            let #id: #ty = unsafe { ::cohort::abi::rebuild::<#ty>((#(#slots,)*)) };
        });
    }
    let wait = if k.dependent {
        quote! {
            // Before anything touches memory: the kernel ahead of this one on the stream may
            // still be running (a programmatic launch), and its writes are visible only after
            // this wait. `launch_programmatic` exists only for kernels that have it.
            ::cohort::launch::wait_for_prior_grid();
        }
    } else {
        quote!()
    };
    let call = cluster_bracket(k, body_call(k, inst));
    let enter = if k.cluster {
        quote! {
            // First, before anything else: every block of the cluster has started before any
            // thread can reach another block's shared memory (`cohort::cg::cluster`).
            ::cohort::cg::cluster::__cluster_enter();
        }
    } else {
        quote!()
    };
    let bounds = bounds_marker(k);
    quote! {
        #(#cfgs)*
        #[cfg(target_arch = "nvptx64")]
        #[unsafe(no_mangle)]
        #[allow(non_snake_case, clippy::too_many_arguments, improper_ctypes_definitions)]
        #[doc(hidden)]
        pub unsafe extern "ptx-kernel" fn #entry(#(#lowered),*) {
            #bounds
            #enter
            #wait
            #(#checks)*
            #(#rebuild)*
            #call
        }
    }
}

/// A kernel with launch bounds starts with their marker (`cohort::raw::launch_bounds_marker`),
/// a PTX comment that `cohort-build` turns into the entry's `.maxntid` / `.minnctapersm` /
/// `.maxnreg` directives (rustc has no way to give them; the runtime refuses a module whose
/// markers were not applied).
fn bounds_marker(k: &Kernel<'_>) -> TokenStream {
    let [t, b, r] = k.bounds;
    if k.bounds == [0; 3] {
        return quote!();
    }
    quote!(::cohort::raw::launch_bounds_marker::<#t, #b, #r>();)
}
