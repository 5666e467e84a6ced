//! Code generation for `#[kernel]`, a file per thing generated:
//!
//! | file | generates | target |
//! |---|---|---|
//! | `entry.rs` | the PTX entry (`extern "ptx-kernel"`) | nvptx64 |
//! | `cpu_entry.rs` | its twin for the CPU device (`__cohort_cpu_<entry>`) | host |
//! | `host_launcher.rs` | `load`, `launch` / `launch_cooperative` / `launch_programmatic` / `add_to` | host |
//! | `device_launcher.rs` | `launch_from_device` (dynamic parallelism) | both |
//! | `abi.rs` | the ABI record (`__cohort_abi_<entry>` and the launcher's `ABI`) | both |
//! | `checks.rs` | the compile-time checks of each parameter's kind against the kernel | both |
//!
//! Every parameter is handled by the same code, generic over `cohort::abi::KernelParam` (its
//! PTX parts, ABI record entries, rebuild on the device and on the CPU device) and
//! `cohort_runtime::KernelArg` (its host arguments): the macro never decides a parameter's kind
//! from its type's name (only whether the launchers take an argument for it,
//! [`Param::made_on_device`]), so type aliases work and a new kind needs no change here.

mod abi;
mod checks;
mod cpu_entry;
mod device_launcher;
mod entry;
mod generics;
mod host_launcher;

use proc_macro2::TokenStream;
use quote::{ToTokens, format_ident, quote};
use syn::{GenericParam, ItemFn};

use crate::ast::{self, Param};
use crate::attr::KernelAttr;
use crate::valid;

/// What every generated piece of one kernel declaration is made from.
struct Kernel<'a> {
    item: &'a ItemFn,
    params: &'a [Param],
    /// The kernel body as an ordinary function (`__cohort_kernel_<name>`).
    body_ident: syn::Ident,
    cooperative: bool,
    multi_grid: bool,
    dependent: bool,
    /// `#[kernel(cluster)]`: the entry brackets the body with the cluster protocol.
    cluster: bool,
    /// `[max threads per block, min blocks per SM, max registers]` (0: not given): the PTX
    /// entry's `.maxntid`, `.minnctapersm` and `.maxnreg` (see `entry::bounds_marker`).
    bounds: [u32; 3],
    /// The kernel's `#[cfg]`s, repeated on everything generated.
    cfgs: Vec<&'a syn::Attribute>,
}

impl Kernel<'_> {
    /// The ABI record's flags (`cohort::abi::ABI_FLAG_COOPERATIVE`, `ABI_FLAG_MULTI_GRID`,
    /// `ABI_FLAG_DEPENDENT`).
    fn flags(&self) -> u32 {
        u32::from(self.cooperative)
            | if self.multi_grid { 2 } else { 0 }
            | if self.dependent { 4 } else { 0 }
            | if self.cluster { 8 } else { 0 }
    }
}

/// One instance of a kernel (one per `instances(...)` entry; one for a non-generic kernel).
struct Instance {
    /// The PTX entry's name: the kernel's, with the instance's arguments appended.
    entry: syn::Ident,
    /// The instance's generic arguments, as the host impl block and the body call write them.
    impl_args: Vec<TokenStream>,
    /// `::<…>` for the body call, or nothing.
    call_generics: TokenStream,
    /// Each parameter's type, the instance's arguments substituted and the kernel's lifetimes
    /// made `'static` (so that it can stand in constants and in generated signatures).
    tys: Vec<TokenStream>,
}

impl Instance {
    /// The index of parameter `k`'s first PTX part: the part counts of those before it.
    fn offset(&self, k: usize) -> TokenStream {
        let before = &self.tys[..k];
        quote!(::cohort::abi::sum(&[#(::cohort::abi::part_count::<#before>()),*]))
    }
    /// The number of PTX parts of the entry.
    fn part_total(&self) -> TokenStream {
        self.offset(self.tys.len())
    }
}

pub fn kernel(attr: TokenStream, item: TokenStream) -> syn::Result<TokenStream> {
    let attr: KernelAttr = syn::parse2(attr)?;
    let mut item: ItemFn = syn::parse2(item)?;
    if attr.contract.is_some() {
        crate::contract::rewrite_fn(&mut item);
    }
    let params = ast::params(&item)?;
    valid::kernel(&item, &attr)?;
    let bounds = valid::launch_bounds(&attr)?;

    let (docs, others): (Vec<_>, Vec<_>) = item.attrs.iter().partition(|a| a.path().is_ident("doc"));
    let multi_grid = attr.multi_grid.is_some();
    let k = Kernel {
        item: &item,
        params: &params,
        body_ident: format_ident!("__cohort_kernel_{}", item.sig.ident),
        cooperative: attr.cooperative.is_some() || multi_grid,
        multi_grid,
        dependent: attr.dependent.is_some(),
        cluster: attr.cluster.is_some(),
        bounds,
        cfgs: others.iter().filter(|a| a.path().is_ident("cfg")).copied().collect(),
    };

    let body_fn = body_fn(&k, &others);
    let mut device = TokenStream::new();
    let mut host_impls = TokenStream::new();
    for inst in generics::instances(&k, &attr) {
        let abi = abi::record(&k, &inst);
        device.extend(checks::params(&k, &inst));
        device.extend(entry::device_entry(&k, &inst));
        device.extend(cpu_entry::cpu_entry(&k, &inst));
        device.extend(abi::device_global(&k, &inst, &abi));
        host_impls.extend(host_launcher::host_impl(&k, &inst, &abi));
        if !k.cooperative {
            host_impls.extend(device_launcher::device_launcher(&k, &inst));
        }
    }
    let host_struct = host_struct(&k, &docs);
    Ok(quote! {
        #body_fn
        #device
        #host_struct
        #host_impls
    })
}

/// The kernel body as an ordinary (generic) function, on both targets: the entry calls it on
/// the device; on the host it type-checks the kernel (for rust-analyzer and clippy) and is what
/// the CPU device runs.
fn body_fn(k: &Kernel<'_>, others: &[&syn::Attribute]) -> TokenStream {
    let mut body_fn = k.item.clone();
    body_fn.sig.ident = k.body_ident.clone();
    body_fn.attrs = others.iter().map(|a| (*a).clone()).collect();
    body_fn.vis = syn::Visibility::Inherited;
    // On the host, the kernel's own visibility, so that the CPU device can run the body from
    // other crates (the device copy stays private: the PTX does not change).
    let mut host_body_fn = body_fn.clone();
    host_body_fn.vis = k.item.vis.clone();
    quote! {
        #[cfg(target_arch = "nvptx64")]
        #[doc(hidden)]
        #[allow(dead_code, non_snake_case, clippy::too_many_arguments)]
        #[inline(always)]
        #body_fn

        #[cfg(not(target_arch = "nvptx64"))]
        #[doc(hidden)]
        #[allow(dead_code, non_snake_case, clippy::too_many_arguments)]
        #[inline(always)]
        #host_body_fn
    }
}

/// The kernel's struct: `name` or `name<T, const N: usize>` (bounds dropped; instances pick).
/// On the host it holds the loaded function; on the device it only names the kernel.
fn host_struct(k: &Kernel<'_>, docs: &[&syn::Attribute]) -> TokenStream {
    let (name, vis, cfgs) = (&k.item.sig.ident, &k.item.vis, &k.cfgs);
    let mut struct_params = Vec::new();
    let mut phantom = Vec::new();
    let mut names = Vec::new();
    for g in &k.item.sig.generics.params {
        match g {
            GenericParam::Type(t) => {
                let i = &t.ident;
                struct_params.push(quote!(#i));
                phantom.push(quote!(#i));
                names.push(i.to_token_stream());
            }
            GenericParam::Const(c) => {
                let (i, ty) = (&c.ident, &c.ty);
                struct_params.push(quote!(const #i: #ty));
                names.push(i.to_token_stream());
            }
            GenericParam::Lifetime(_) => {}
        }
    }
    let struct_generics = if struct_params.is_empty() { quote!() } else { quote!(<#(#struct_params),*>) };
    let struct_generics_names = if names.is_empty() { quote!() } else { quote!(<#(#names),*>) };
    let launch_doc = if k.multi_grid {
        "Launch with `add_to` on a `MultiGridLaunch` (one grid per GPU of a `MultiGrid`), then `submit`."
    } else if k.cooperative {
        "Launch with `launch_cooperative`: this kernel uses grid sync, so it runs only in cooperative launches."
    } else if k.dependent {
        "Launch with `launch`, or with `launch_programmatic` to let it begin while the kernel before it on the \
         stream finishes (programmatic dependent launch: it waits for that kernel at its entry)."
    } else {
        "Launch with `launch`."
    };
    quote! {
        #(#cfgs)*
        #[cfg(not(target_arch = "nvptx64"))]
        #(#docs)*
        ///
        /// *Host side of a `#[kernel]`*: `load` it from a module, then launch it with typed arguments.
        #[doc = #launch_doc]
        #[allow(non_camel_case_types)]
        #vis struct #name #struct_generics {
            function: ::cohort_runtime::Function,
            _marker: ::core::marker::PhantomData<fn() -> (#(#phantom,)*)>,
        }

        #(#cfgs)*
        #[cfg(target_arch = "nvptx64")]
        #(#docs)*
        ///
        /// *Device side of a `#[kernel]`*: launch it from another kernel with `launch_from_device`.
        #[allow(non_camel_case_types, dead_code)]
        #vis struct #name #struct_generics {
            _marker: ::core::marker::PhantomData<fn() -> (#(#phantom,)*)>,
        }

        #(#cfgs)*
        #[cfg(not(target_arch = "nvptx64"))]
        impl #struct_generics ::core::fmt::Debug for #name #struct_generics_names {
            fn fmt(&self, f: &mut ::core::fmt::Formatter<'_>) -> ::core::fmt::Result {
                ::core::fmt::Debug::fmt(&self.function, f)
            }
        }
    }
}

/// "`a: T`, `b: U`" for a launcher's docs: the parameters it takes arguments for.
fn arg_docs(params: &[Param]) -> String {
    let docs: Vec<String> = params
        .iter()
        .filter(|p| !p.made_on_device)
        .map(|p| format!("`{}: {}`", p.ident, p.ty.to_token_stream()))
        .collect();
    if docs.is_empty() { "none".to_string() } else { docs.join(", ") }
}
