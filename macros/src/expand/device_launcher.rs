//! The device-side launcher of a kernel instance (`launch_from_device`, CDP2 dynamic
//! parallelism). Each argument (not made on the device) is a type parameter bound by
//! `cohort::abi::ChildArg<ArgKeyFn<fn(P)>, S>` (values, slices, `DisjointSlice`s and raw pointers
//! have impls; their stream bounds keep what a concurrent child could race on to tail
//! launches), which stages it; the check and the PTX parts are the parameter's own
//! (`cohort::abi::ChildKey`, keyed by the parameter type, so that the calls resolve in the
//! launcher's own body as direct calls would). Every argument is staged and checked in
//! parameter order before a launch slot is taken, then its parts are written into the child's
//! parameter buffer in the order of the entry's `.param`s.

use proc_macro2::TokenStream;
use quote::{format_ident, quote, quote_spanned};
use syn::spanned::Spanned;

use super::{Instance, Kernel, arg_docs};

pub(super) fn device_launcher(k: &Kernel<'_>, inst: &Instance) -> TokenStream {
    let (name, cfgs, entry) = (&k.item.sig.ident, &k.cfgs, &inst.entry);
    // The instance's CPU entry (`cpu_entry`), which the CPU device runs the child with.
    let cpu_sym = format_ident!("__cohort_cpu_{}", entry);
    let entry_str = entry.to_string();
    let mut dev_params = Vec::new();
    let mut dev_generics = Vec::new();
    let mut checks = Vec::new();
    let mut pushes = Vec::new();
    for (index, (p, ty)) in k.params.iter().zip(&inst.tys).enumerate() {
        let id = &p.ident;
        let index = index as u32;
        let parts = format_ident!("__cohort_{}_parts", id);
        if p.made_on_device {
            // Its block shape, if it is a `BlockShape` (the others are in cooperative kernels,
            // which have no device launcher).
            checks.push(quote!(::cohort::abi::child_made_on_device::<#ty>(config)?;));
        } else {
            // A named type parameter per argument, so that its `ChildArg` impl can be named.
            let a = format_ident!("__CohortArg{}", index);
            let f = quote_spanned!(p.ty.span()=> fn(#ty));
            let key = quote!(<::cohort::abi::ArgKeyFn<#f> as ::cohort::abi::ChildKey>);
            dev_generics.push(quote_spanned! {p.ty.span()=>
                #a: ::cohort::abi::ChildArg<'__cohort_a, ::cohort::abi::ArgKeyFn<#f>, S>
            });
            dev_params.push(quote!(#id: #a));
            // Staged and checked in parameter order, before a launch slot is taken; the check
            // and the parts are the parameter's (`ChildKey`), the staging the argument's.
            checks.push(quote! {
                let #parts = ::cohort::abi::ChildArg::<'_, ::cohort::abi::ArgKeyFn<#f>, S>::stage(#id);
                #key::check(#parts, #index)?;
            });
            pushes.push(quote!(::cohort::abi::PtxParts::push(#key::parts(#parts), &mut __cohort_buf);));
        }
    }
    let unsafety = &k.item.sig.unsafety;
    let impl_args = &inst.impl_args;
    let ty_args = if impl_args.is_empty() { quote!() } else { quote!(<#(#impl_args),*>) };
    let doc = format!(
        "Launches `{entry}` from device code (dynamic parallelism, CDP2) with `config` into `stream` \
         (`TailLaunch`, `FireAndForget` or `BlockStream`; see `cohort::launch` for when each runs and \
         what the child sees). Arguments: {}.",
        arg_docs(k.params)
    );
    let safety_doc = if unsafety.is_some() {
        quote! {
            ///
            /// # Safety
            /// The kernel is `unsafe fn`: its raw-pointer arguments must point at global memory valid
            /// for what the child does with them for as long as it may run (until the parent's own
            /// launch completes), nothing may race with the child on that memory (mind that a
            /// fire-and-forget child runs concurrently with the parent grid), and the kernel's own
            /// safety contract must hold.
        }
    } else {
        quote!()
    };
    quote! {
        #(#cfgs)*
        impl #name #ty_args {
            #[doc = #doc]
            ///
            /// # Errors
            /// An impossible configuration, a slice outside global memory, a block that differs from
            /// the kernel's `BlockShape`, or a launch the device runtime refuses (no launch slot left:
            /// the pending-launch limit) — see `cohort::launch::LaunchError`. Nothing is launched then.
            #safety_doc
            #[inline(always)]
            #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
            #[allow(clippy::too_many_arguments, unused_variables, unreachable_code)]
            pub #unsafety fn launch_from_device<'__cohort_a, S: ::cohort::launch::DeviceStream, #(#dev_generics),*>(
                config: &::cohort::launch::LaunchConfig,
                stream: S,
                #(#dev_params),*
            ) -> ::core::result::Result<(), ::cohort::launch::LaunchError> {
                #(#checks)*
                #[cfg(target_arch = "nvptx64")]
                let __cohort_entry = #entry as *const () as u64;
                // On the CPU device: the instance's host entry (`cpu_entry`) and its name.
                #[cfg(not(target_arch = "nvptx64"))]
                let __cohort_entry = ::cohort::launch::HostEntry::new(#cpu_sym, #entry_str);
                // SAFETY: `__cohort_entry` is the entry `#[kernel]` generated from this declaration,
                // and the pushes below write its `.param`s in order, each as the type the entry
                // takes it as (the kind's PTX parts).
                let mut __cohort_buf = unsafe { ::cohort::launch::ParamBuffer::new(__cohort_entry, config) }?;
                // SAFETY: as above; the arguments passed what their kind and stream require (the
                // `ChildArg` impls: racy memory only in tail launches, global memory only).
                unsafe {
                    #(#pushes)*
                }
                __cohort_buf.launch(stream)
            }
        }
    }
}
