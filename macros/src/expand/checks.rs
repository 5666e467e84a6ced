//! The compile-time checks of each parameter against its kernel, from its kind
//! (`cohort::abi::KernelParam`): a `const` item per parameter and instance, spanned on the
//! parameter's type, that fails to evaluate with the kind's own message. Being checks on the
//! type rather than on its name, they hold for type aliases.

use proc_macro2::TokenStream;
use quote::{ToTokens, quote_spanned};
use syn::spanned::Spanned;

use super::{Instance, Kernel};

pub(super) fn params(k: &Kernel<'_>, inst: &Instance) -> TokenStream {
    let cfgs = &k.cfgs;
    let flags = k.flags();
    let is_unsafe = k.item.sig.unsafety.is_some();
    let mut out = TokenStream::new();
    for (i, (p, ty)) in k.params.iter().zip(&inst.tys).enumerate() {
        let before = &inst.tys[..i];
        let all = &inst.tys;
        let id = &p.ident;
        let written = p.ty.to_token_stream().to_string();
        let made_on_device = p.made_on_device;
        let made_msg = if made_on_device {
            format!(
                "kernel parameter `{id}: {written}`: a type named `GridGroup`, `MultiGridGroup` or `BlockShape` is taken \
                 for Cohort's, which the launchers make on the device (they take no argument for it); this one is not"
            )
        } else {
            format!(
                "kernel parameter `{id}: {written}` is made on the device (a `GridGroup`, `MultiGridGroup` or \
                 `BlockShape`): write it by that name, not through an alias, so that `#[kernel]` leaves it out of the \
                 launchers' arguments"
            )
        };
        let zero_msg = format!(
            "kernel parameter `{id}` is zero-sized: the PTX entry would have no parameter for it and every \
             argument after it would shift; remove it (a kernel needs no marker values)"
        );
        let kp = quote_spanned!(p.ty.span()=> <#ty as ::cohort::abi::KernelParam>);
        out.extend(quote_spanned! {p.ty.span()=>
            #(#cfgs)*
            const _: () = {
                let __cohort_needs: (u32, &str) = #kp::NEEDS;
                if ::cohort::abi::lacks(__cohort_needs.0, #flags) {
                    ::core::panic!("{}", __cohort_needs.1);
                }
                if #kp::UNSAFE && !#is_unsafe {
                    ::core::panic!(
                        "raw pointer parameters make a kernel `unsafe`: declare it `unsafe fn` (its launcher is then \
                         `unsafe` too), or take `&[T]` / `DisjointSlice<T>`"
                    );
                }
                if #kp::MADE_ON_DEVICE != #made_on_device {
                    ::core::panic!(#made_msg);
                }
                let __cohort_once: (u32, &str) = #kp::ONCE;
                if ::cohort::abi::or_all(&[#(<#before as ::cohort::abi::KernelParam>::ONCE.0),*]) & __cohort_once.0 != 0 {
                    ::core::panic!("{}", __cohort_once.1);
                }
                if let ::core::option::Option::Some(__cohort_msg) = #kp::NEEDS_SHAPE {
                    if ::cohort::abi::or_all(&[#(<#all as ::cohort::abi::KernelParam>::SHAPE[0]),*]) == 0 {
                        ::core::panic!("{}", __cohort_msg);
                    }
                }
                ::core::assert!(
                    <::cohort::abi::Parts<#ty> as ::cohort::abi::PtxParts>::SIZED,
                    #zero_msg
                );
            };
        });
    }
    out
}
