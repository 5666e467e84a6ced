//! The CPU device's entry of a kernel instance (`__cohort_cpu_<entry>`, a
//! `cohort_runtime::CpuEntry`).

use proc_macro2::TokenStream;
use quote::{format_ident, quote};

use super::entry::{body_call, cluster_bracket};
use super::{Instance, Kernel};

/// Reads the same PTX parts as the PTX entry from a `cuLaunchKernel`-style parameter array
/// (each kind's `PtxParts::read`), once per launch; then each CUDA thread rebuilds the
/// arguments and calls the body as the PTX entry does. The runtime calls it inside a
/// `cohort_cpu` launch.
pub(super) fn cpu_entry(k: &Kernel<'_>, inst: &Instance) -> TokenStream {
    let (cfgs, entry, tys) = (&k.cfgs, &inst.entry, &inst.tys);
    let sym = format_ident!("__cohort_cpu_{}", entry);
    let array = format_ident!("__cohort_params");
    let parts: Vec<syn::Ident> = k.params.iter().map(|p| format_ident!("__cohort_{}_parts", p.ident)).collect();
    let offsets: Vec<TokenStream> = (0..tys.len()).map(|i| inst.offset(i)).collect();
    let ids = k.params.iter().map(|p| &p.ident);
    let call = cluster_bracket(k, body_call(k, inst));
    let enter = if k.cluster { quote!(::cohort::cg::cluster::__cluster_enter();) } else { quote!() };
    let doc = format!(
        "The CPU device's entry of `{entry}` (a `cohort_runtime::CpuEntry`): reads its PTX parameters from \
         `{array}` once, then runs the launch `spec` on the CPU engine, each CUDA thread rebuilding the kernel's \
         arguments and running the body (inlined into the engine's thread loop)."
    );
    quote! {
        #(#cfgs)*
        #[cfg(not(target_arch = "nvptx64"))]
        #[doc = #doc]
        ///
        /// # Safety
        /// As `cohort_runtime::CpuEntry`: the array holds one pointer per PTX parameter of the
        /// entry, in order, each to a value of that parameter's type (addresses as `u64`s of host
        /// memory valid as the GPU entry requires, for the whole launch), and `spec` is a launch
        /// the runtime checked as it checks a GPU launch of this kernel (cooperative where the
        /// kernel is, its block shape where it declares one).
        #[doc(hidden)]
        #[allow(non_snake_case, dead_code, unused_unsafe, unused_variables, clippy::too_many_arguments)]
        pub unsafe fn #sym(
            #array: *const *mut ::core::ffi::c_void,
            __cohort_spec: &::cohort::__cpu::LaunchSpec,
        ) -> ::core::result::Result<(), ::cohort::__cpu::CpuError> {
            // SAFETY: the caller's contract (`CpuEntry`'s): `#array` holds one valid pointer per
            // PTX parameter of this entry, in order, each to the host representation of its part
            // (`PtxPart::Host`: addresses as `u64`), which `read` copies out at any alignment.
            // The parts are integers, `DeviceCopy` values and addresses; every thread only
            // copies them out, and what the addresses point at is shared exactly as the GPU
            // entry's parameters are (the rebuild below is the PTX entry's).
            let __cohort_slots = unsafe {
                ::cohort::abi::SharedParts::new((
                    #(<::cohort::abi::Parts<#tys> as ::cohort::abi::PtxParts>::read(#array.add(#offsets)),)*
                ))
            };
            let __cohort_slots = &__cohort_slots;
            ::cohort::__cpu::launch_typed(__cohort_spec, &|| {
                #enter
                let (#(#parts,)*) = __cohort_slots.get();
                #(
                    // SAFETY: as the PTX entry's rebuild: the launcher passed what the kind
                    // requires, under the launch checks its ABI record asked for.
                    let #ids: #tys = unsafe { <#tys as ::cohort::abi::KernelParam>::rebuild(#parts) };
                )*
                #call
            })
        }
    }
}
