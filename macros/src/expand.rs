//! Code generation for `#[kernel]`: the device entry (nvptx64), its twin for the CPU device
//! (host: the same parameters read from a launch's parameter array), the typed launcher (host)
//! and the typed device-side launcher (`launch_from_device`, dynamic parallelism).

use std::collections::HashMap;

use proc_macro2::{Delimiter, Group, Span, TokenStream, TokenTree};
use quote::{ToTokens, format_ident, quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{GenericParam, ItemFn};

use crate::ast::{self, Param, ParamKind};
use crate::attr::KernelAttr;
use crate::valid;

pub fn kernel(attr: TokenStream, item: TokenStream) -> syn::Result<TokenStream> {
    let attr: KernelAttr = syn::parse2(attr)?;
    let mut item: ItemFn = syn::parse2(item)?;
    if attr.contract.is_some() {
        crate::contract::rewrite_fn(&mut item);
    }
    let params = ast::params(&item)?;
    valid::kernel(&item, &attr, &params)?;

    let name = &item.sig.ident;
    let body_ident = format_ident!("__cohort_kernel_{}", name);
    let multi_grid = attr.multi_grid.is_some();
    let cooperative = attr.cooperative.is_some() || multi_grid;
    let dependent = attr.dependent.is_some();

    let (docs, others): (Vec<_>, Vec<_>) = item.attrs.iter().partition(|a| a.path().is_ident("doc"));
    let cfgs: Vec<&syn::Attribute> = others.iter().filter(|a| a.path().is_ident("cfg")).copied().collect();

    // The kernel body as an ordinary (generic) function, on both targets: the entry calls it on
    // the device; on the host it type-checks the kernel (for rust-analyzer and clippy) and is
    // where CPU execution will live.
    let mut body_fn = item.clone();
    body_fn.sig.ident = body_ident.clone();
    body_fn.attrs = others.iter().map(|a| (*a).clone()).collect();
    body_fn.vis = syn::Visibility::Inherited;
    // On the host, the kernel's own visibility, so that the CPU device can run the body from
    // other crates (the device copy stays private: the PTX does not change).
    let mut host_body_fn = body_fn.clone();
    host_body_fn.vis = item.vis.clone();
    let body_fn = quote! {
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
    };

    // Generic parameters (type and const), in order, and their instances.
    let generics: Vec<&GenericParam> =
        item.sig.generics.params.iter().filter(|g| !matches!(g, GenericParam::Lifetime(_))).collect();
    let instances: Vec<Option<Vec<TokenStream>>> = match &attr.instances {
        Some((_, insts)) => insts.iter().map(|i| Some(i.args.clone())).collect(),
        None => vec![None],
    };

    let mut device = TokenStream::new();
    let mut host_impls = TokenStream::new();
    for inst in &instances {
        let mut map = HashMap::new();
        let mut turbofish = Vec::new();
        let mut impl_args = Vec::new();
        let mut suffix = Vec::new();
        if let Some(args) = inst {
            for (g, a) in generics.iter().zip(args) {
                let (ident, is_const) = match g {
                    GenericParam::Type(t) => (t.ident.to_string(), false),
                    GenericParam::Const(c) => (c.ident.to_string(), true),
                    GenericParam::Lifetime(_) => unreachable!(),
                };
                map.insert(ident, a.clone());
                let arg = if is_const { quote!({ #a }) } else { a.clone() };
                turbofish.push(arg.clone());
                impl_args.push(arg);
                suffix.push(sanitize(&a.to_string()));
            }
        }
        let entry = if suffix.is_empty() { name.clone() } else { format_ident!("{}_{}", name, suffix.join("_")) };
        let entry_str = entry.to_string();
        let subst = |t: &dyn ToTokens| substitute(t.to_token_stream(), &map);
        let call_generics = if turbofish.is_empty() { quote!() } else { quote!(::<#(#turbofish),*>) };

        let abi = abi_record(&params, cooperative, multi_grid, dependent, &subst);
        let lowering = lower(&item, &params, &body_ident, &call_generics, &subst);
        device.extend(device_entry(&lowering, &entry, &cfgs, dependent));
        device.extend(cpu_entry(&lowering, &entry, &cfgs));
        device.extend(device_abi(&entry, &abi, &cfgs));
        host_impls.extend(zero_sized_checks(&params, &cfgs, &subst));
        host_impls.extend(host_impl(
            &item,
            &params,
            &entry_str,
            cooperative,
            multi_grid,
            dependent,
            &impl_args,
            &cfgs,
            &subst,
            &abi,
            &lowering,
        ));
        if !cooperative {
            host_impls.extend(device_launcher(&item, &params, &entry, &impl_args, &cfgs, &subst));
        }
    }

    // The host struct: `name` or `name<T, const N: usize>` (bounds dropped; instances pick).
    let vis = &item.vis;
    let mut struct_params = Vec::new();
    let mut phantom = Vec::new();
    for g in &generics {
        match g {
            GenericParam::Type(t) => {
                let i = &t.ident;
                struct_params.push(quote!(#i));
                phantom.push(quote!(#i));
            }
            GenericParam::Const(c) => {
                let i = &c.ident;
                let ty = &c.ty;
                struct_params.push(quote!(const #i: #ty));
            }
            GenericParam::Lifetime(_) => {}
        }
    }
    let struct_generics = if struct_params.is_empty() { quote!() } else { quote!(<#(#struct_params),*>) };
    let struct_generics_names = {
        let names: Vec<TokenStream> = generics
            .iter()
            .map(|g| match g {
                GenericParam::Type(t) => t.ident.to_token_stream(),
                GenericParam::Const(c) => c.ident.to_token_stream(),
                GenericParam::Lifetime(_) => unreachable!(),
            })
            .collect();
        if names.is_empty() { quote!() } else { quote!(<#(#names),*>) }
    };
    let launch_doc = if multi_grid {
        "Launch with `add_to` on a `MultiGridLaunch` (one grid per GPU of a `MultiGrid`), then `submit`."
    } else if cooperative {
        "Launch with `launch_cooperative`: this kernel uses grid sync, so it runs only in cooperative launches."
    } else if dependent {
        "Launch with `launch`, or with `launch_programmatic` to let it begin while the kernel before it on the \
         stream finishes (programmatic dependent launch: it waits for that kernel at its entry)."
    } else {
        "Launch with `launch`."
    };
    let host_struct = quote! {
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
    };

    Ok(quote! {
        #body_fn
        #device
        #host_struct
        #host_impls
    })
}

/// The expression of a kernel instance's ABI record (`cohort::abi`): one entry per PTX
/// parameter, in order, with the size and alignment of its type as the compiling target sees it.
fn abi_record(
    params: &[Param],
    cooperative: bool,
    multi_grid: bool,
    dependent: bool,
    subst: &dyn Fn(&dyn ToTokens) -> TokenStream,
) -> TokenStream {
    let mut entries = Vec::new();
    let mut shape = quote!([0u32; 3]);
    let one = |ty: TokenStream, kind: &str| {
        let kind = format_ident!("{}", kind);
        quote!(::cohort::abi::abi_param::<#ty>(::cohort::abi::AbiKind::#kind))
    };
    for p in params {
        match &p.kind {
            ParamKind::Scalar => entries.push(one(subst(&p.ty), "Value")),
            ParamKind::Slice(elem) => {
                entries.push(one(subst(elem), "SlicePtr"));
                entries.push(one(quote!(usize), "Len"));
            }
            ParamKind::Disjoint(elem) => {
                entries.push(one(subst(elem), "DisjointPtr"));
                entries.push(one(quote!(usize), "Len"));
            }
            ParamKind::Append(elem) => {
                entries.push(one(subst(elem), "AppendPtr"));
                entries.push(one(quote!(usize), "Len"));
                entries.push(one(quote!(u64), "CounterPtr"));
            }
            ParamKind::GridVec(elem) => {
                entries.push(one(subst(elem), "GridVecPtr"));
                entries.push(one(quote!(usize), "Len"));
                entries.push(one(quote!(u32), "BarrierPtr"));
            }
            ParamKind::ConstPtr(_) => entries.push(one(quote!(u64), "ConstPtr")),
            ParamKind::MutPtr(_) => entries.push(one(quote!(u64), "MutPtr")),
            ParamKind::Matrix(elem) => {
                entries.push(one(subst(elem), "MatrixPtr"));
                let ty_s = subst(&p.ty);
                entries.push(quote!(::cohort::abi::abi_matrix_rows::<#ty_s>()));
                entries.push(one(quote!(usize), "Len"));
            }
            ParamKind::MatrixRef(elem) => {
                entries.push(one(subst(elem), "MatrixRefPtr"));
                let ty_s = subst(&p.ty);
                entries.push(quote!(::cohort::abi::abi_matrix_rows::<#ty_s>()));
                entries.push(one(quote!(usize), "Len"));
            }
            ParamKind::Grid => {}
            ParamKind::MultiGridVec(elem) => {
                entries.push(one(subst(elem), "MultiGridVecPtr"));
                entries.push(one(quote!(u64), "ConstPtr"));
                entries.push(one(quote!(usize), "Len"));
                entries.push(one(quote!(u32), "Value"));
                entries.push(one(quote!(u32), "BarrierPtr"));
                entries.push(one(quote!(u32), "Value"));
            }
            ParamKind::MultiGrid => {
                entries.push(one(quote!(::cohort::cg::MultiGridWords), "MultiGridPtr"));
                entries.push(one(quote!(u32), "Value"));
                entries.push(one(quote!(u32), "Value"));
            }
            ParamKind::Shape => {
                let ty = subst(&p.ty);
                shape = quote!(<#ty>::DIMS);
            }
        }
    }
    let n = entries.len();
    // `cohort::abi::ABI_FLAG_COOPERATIVE`, `ABI_FLAG_MULTI_GRID`, `ABI_FLAG_DEPENDENT`.
    let flags = u32::from(cooperative) | if multi_grid { 2u32 } else { 0 } | if dependent { 4u32 } else { 0 };
    quote! {
        ::cohort::abi::abi_record::<{ ::cohort::abi::abi_len(#n) }>(#flags, #shape, &[#(#entries),*])
    }
}

/// The device half of the ABI record: a global `__cohort_abi_<entry>` in the PTX module, which
/// the host runtime compares with the launcher's own record at `load()`.
fn device_abi(entry: &syn::Ident, abi: &TokenStream, cfgs: &[&syn::Attribute]) -> TokenStream {
    let sym = format_ident!("__cohort_abi_{}", entry);
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

/// Zero-sized by-value parameters have no PTX parameter at all (rustc drops them from the
/// entry), so every argument after one would land in the wrong slot: refuse them, on the
/// parameter's type.
fn zero_sized_checks(
    params: &[Param],
    cfgs: &[&syn::Attribute],
    subst: &dyn Fn(&dyn ToTokens) -> TokenStream,
) -> TokenStream {
    let mut out = TokenStream::new();
    for p in params {
        if let ParamKind::Scalar = p.kind {
            let ty = subst(&p.ty);
            let id = &p.ident;
            let msg = format!(
                "kernel parameter `{id}` is zero-sized: the PTX entry would have no parameter for it and every \
                 argument after it would shift; remove it (a kernel needs no marker values)"
            );
            out.extend(quote_spanned! {p.ty.span()=>
                #(#cfgs)*
                const _: () = ::core::assert!(::core::mem::size_of::<#ty>() != 0, #msg);
            });
        }
    }
    out
}

/// One PTX parameter of a kernel instance's entry: its name inside the entry, its type, and
/// whether it is an address (a `*const T`/`*mut T`, a `.u64` in PTX) that the host launcher
/// stores as a `u64`.
struct LoweredParam {
    ident: syn::Ident,
    ty: TokenStream,
    addr: bool,
}

impl LoweredParam {
    fn value(ident: &syn::Ident, ty: TokenStream) -> Self {
        Self { ident: ident.clone(), ty, addr: false }
    }
    fn addr(ident: &syn::Ident, ty: TokenStream) -> Self {
        Self { ident: ident.clone(), ty, addr: true }
    }
}

/// What both entries of a kernel instance (the PTX entry and the CPU device's host entry) are
/// made of: the PTX parameter list, the statements that rebuild the kernel's arguments from
/// those parameters, and the call of the body with them. One list, so that the two entries
/// read the same parameters in the same order and rebuild them alike.
struct Lowering {
    /// The PTX parameters, in order: the entry's signature, and the order of the host
    /// launcher's parameter array.
    params: Vec<LoweredParam>,
    /// Compile-time checks of the parameter types (the device entry's; the host launcher makes
    /// the same ones, so the host entry leaves them out rather than report each error twice).
    checks: Vec<TokenStream>,
    /// `let` statements rebuilding each kernel argument from its PTX parameters.
    rebuild: Vec<TokenStream>,
    /// The call of the kernel body with the rebuilt arguments.
    call: TokenStream,
}

fn lower(
    item: &ItemFn,
    params: &[Param],
    body_ident: &syn::Ident,
    call_generics: &TokenStream,
    subst: &dyn Fn(&dyn ToTokens) -> TokenStream,
) -> Lowering {
    let mut lowered = Vec::new();
    let mut checks = Vec::new();
    let mut rebuild = Vec::new();
    let mut args = Vec::new();
    for p in params {
        let id = &p.ident;
        let ptr = format_ident!("__cohort_{}_ptr", id);
        let len = format_ident!("__cohort_{}_len", id);
        match &p.kind {
            ParamKind::Scalar => {
                let ty = subst(&p.ty);
                lowered.push(LoweredParam::value(id, ty.clone()));
                checks.push(quote_spanned!(p.ty.span()=> ::cohort::abi::assert_device_copy::<#ty>();));
            }
            ParamKind::Slice(elem) => {
                let elem_s = subst(elem);
                lowered.push(LoweredParam::addr(&ptr, quote!(*const #elem_s)));
                lowered.push(LoweredParam::value(&len, quote!(usize)));
                checks.push(quote_spanned!(elem.span()=> ::cohort::abi::assert_slice_element::<#elem_s>();));
                rebuild.push(quote! {
                    // SAFETY: the host launcher passed a live device allocation of `len` elements
                    // that stays unchanged (or is only accessed atomically) during the launch
                    // (on the CPU device, host memory: the runtime's buffers are host memory).
                    let #id: &[#elem_s] = unsafe { ::cohort::abi::slice(#ptr, #len) };
                });
            }
            ParamKind::Disjoint(elem) => {
                let elem_s = subst(elem);
                let ty_s = subst(&p.ty);
                checks.push(quote_spanned!(elem.span()=> ::cohort::abi::assert_device_copy::<#elem_s>();));
                lowered.push(LoweredParam::addr(&ptr, quote!(*mut #elem_s)));
                lowered.push(LoweredParam::value(&len, quote!(usize)));
                rebuild.push(quote! {
                    // SAFETY: the host launcher passed an exclusively borrowed device allocation
                    // of `len` elements; every thread receives the same one, so `ThreadIndex`
                    // keeps their writes disjoint.
                    let #id: #ty_s = unsafe { ::cohort::abi::disjoint(#ptr, #len) };
                });
            }
            ParamKind::Append(elem) => {
                let elem_s = subst(elem);
                let counter = format_ident!("__cohort_{}_counter", id);
                checks.push(quote_spanned!(elem.span()=> ::cohort::abi::assert_device_copy::<#elem_s>();));
                lowered.push(LoweredParam::addr(&ptr, quote!(*mut #elem_s)));
                lowered.push(LoweredParam::value(&len, quote!(usize)));
                lowered.push(LoweredParam::addr(&counter, quote!(*mut u64)));
                rebuild.push(quote! {
                    // SAFETY: the host launcher passed an exclusively borrowed `AppendBuffer`:
                    // `len` elements and their counter, in device memory, for this launch.
                    let #id = unsafe { ::cohort::abi::append::<#elem_s>(#ptr, #len, #counter) };
                });
            }
            ParamKind::GridVec(elem) => {
                let elem_s = subst(elem);
                let barrier = format_ident!("__cohort_{}_barrier", id);
                checks.push(quote_spanned!(elem.span()=> ::cohort::abi::assert_device_copy::<#elem_s>();));
                lowered.push(LoweredParam::addr(&ptr, quote!(*mut #elem_s)));
                lowered.push(LoweredParam::value(&len, quote!(usize)));
                lowered.push(LoweredParam::addr(&barrier, quote!(*mut u32)));
                rebuild.push(quote! {
                    // SAFETY: the host launcher passed an exclusively borrowed `GridVecBuffer`:
                    // `len` elements and their barrier word, in device memory, for this launch;
                    // every thread receives the same one.
                    let #id = unsafe { ::cohort::abi::grid_vec::<#elem_s>(#ptr, #len, #barrier) };
                });
            }
            ParamKind::ConstPtr(elem) => {
                let elem_s = subst(elem);
                lowered.push(LoweredParam::addr(id, quote!(*const #elem_s)));
            }
            ParamKind::MutPtr(elem) => {
                let elem_s = subst(elem);
                lowered.push(LoweredParam::addr(id, quote!(*mut #elem_s)));
            }
            ParamKind::Matrix(elem) => {
                let elem_s = subst(elem);
                let ty_s = subst(&p.ty);
                let cols = format_ident!("__cohort_{}_cols", id);
                checks.push(quote_spanned!(elem.span()=> ::cohort::abi::assert_device_copy::<#elem_s>();));
                lowered.push(LoweredParam::addr(&ptr, quote!(*mut #elem_s)));
                lowered.push(LoweredParam::value(&len, quote!(usize)));
                lowered.push(LoweredParam::value(&cols, quote!(usize)));
                rebuild.push(quote! {
                    // SAFETY: the host launcher passed an exclusively borrowed `MatrixMut`: a
                    // device allocation of at least `rows * cols` elements, a shape whose
                    // offsets fit the parameter's index type (`matrix_shape_fits`, refused
                    // otherwise); every thread receives the same one, and the layout is the
                    // parameter's type.
                    let #id: #ty_s = unsafe { ::cohort::abi::disjoint_matrix(#ptr, #len, #cols) };
                });
            }
            ParamKind::MatrixRef(elem) => {
                let elem_s = subst(elem);
                let ty_s = subst(&p.ty);
                let cols = format_ident!("__cohort_{}_cols", id);
                lowered.push(LoweredParam::addr(&ptr, quote!(*const #elem_s)));
                lowered.push(LoweredParam::value(&len, quote!(usize)));
                lowered.push(LoweredParam::value(&cols, quote!(usize)));
                checks.push(quote_spanned!(elem.span()=> ::cohort::abi::assert_slice_element::<#elem_s>();));
                rebuild.push(quote! {
                    // SAFETY: the host launcher passed a `MatrixRef`: a shared borrow of a device
                    // allocation (host memory on the CPU device) of at least `rows * cols`
                    // elements and at least one, unchanged during the launch, with a shape whose
                    // offsets fit the parameter's index type (`matrix_shape_fits`, refused
                    // otherwise).
                    let #id: #ty_s = unsafe { ::cohort::abi::matrix(#ptr, #len, #cols) };
                });
            }
            ParamKind::Shape => {
                let ty_s = subst(&p.ty);
                rebuild.push(quote! {
                    // SAFETY: the launcher of this entry refuses every block shape but this one
                    // (the shape is in the ABI record, which `load` compared with the module's).
                    let #id: #ty_s = unsafe { <#ty_s>::new_unchecked() };
                });
            }
            ParamKind::Grid => {
                rebuild.push(quote! {
                    // SAFETY: `#[kernel(cooperative)]` kernels are launched only through
                    // `launch_cooperative`, and `#[kernel(multi_grid)]` kernels only through
                    // `MultiGridLaunch::submit`; both use `cuLaunchCooperativeKernel` after
                    // checking that the grid is co-resident (the CPU device: a cooperative
                    // `cohort_cpu` launch, after the same check).
                    let #id = unsafe { ::cohort::cg::GridGroup::new_unchecked() };
                });
            }
            ParamKind::MultiGridVec(elem) => {
                let elem_s = subst(elem);
                let table = format_ident!("__cohort_{}_table", id);
                let replicas = format_ident!("__cohort_{}_replicas", id);
                let barrier = format_ident!("__cohort_{}_barrier", id);
                let tag = format_ident!("__cohort_{}_tag", id);
                checks.push(quote_spanned!(elem.span()=> ::cohort::abi::assert_device_copy::<#elem_s>();));
                lowered.push(LoweredParam::addr(&ptr, quote!(*mut #elem_s)));
                lowered.push(LoweredParam::addr(&table, quote!(*const u64)));
                lowered.push(LoweredParam::value(&len, quote!(usize)));
                lowered.push(LoweredParam::value(&replicas, quote!(u32)));
                lowered.push(LoweredParam::addr(&barrier, quote!(*mut u32)));
                lowered.push(LoweredParam::value(&tag, quote!(u32)));
                rebuild.push(quote! {
                    // SAFETY: the host passed an exclusively borrowed `MultiGridVecBuffer` made for
                    // the launch's GPUs (checked by `add_to`): this GPU's replica, the table of
                    // every replica's address (peer access on), the barrier word of this GPU
                    // and the vector's tag, the same in every grid, for this launch.
                    let #id = unsafe { ::cohort::abi::multi_grid_vec::<#elem_s>(#ptr, #table, #len, #replicas, #barrier, #tag) };
                });
            }
            ParamKind::MultiGrid => {
                let words = format_ident!("__cohort_{}_words", id);
                let rank = format_ident!("__cohort_{}_rank", id);
                let grids = format_ident!("__cohort_{}_grids", id);
                lowered.push(LoweredParam::value(&words, quote!(u64)));
                lowered.push(LoweredParam::value(&rank, quote!(u32)));
                lowered.push(LoweredParam::value(&grids, quote!(u32)));
                rebuild.push(quote! {
                    // SAFETY: `#[kernel(multi_grid)]` kernels are launched only through
                    // `MultiGridLaunch::submit`, which launches the kernel cooperatively on
                    // every GPU of its `MultiGrid` at once (co-residency checked on each), with
                    // the same configuration, this grid's rank and the grid count, and a fresh
                    // barrier block of host-mapped memory that no other launch uses meanwhile.
                    let #id = unsafe { ::cohort::cg::MultiGridGroup::new_unchecked(#words, #rank, #grids) };
                });
            }
        }
        args.push(quote!(#id));
    }
    let call = if item.sig.unsafety.is_some() {
        quote! {
            // SAFETY: the caller of the `unsafe` launcher took on the kernel's contract.
            unsafe { #body_ident #call_generics (#(#args),*) }
        }
    } else {
        quote!(#body_ident #call_generics (#(#args),*))
    };
    Lowering { params: lowered, checks, rebuild, call }
}

/// The PTX entry of a kernel instance: `extern "ptx-kernel"`, its parameters the lowered list.
/// A `dependent` kernel's entry first waits for its programmatic prerequisites
/// (`griddepcontrol.wait`, sm_90), before any argument is rebuilt or any of its body runs: the
/// host may then launch it before the kernel ahead of it on the stream has finished.
fn device_entry(lowering: &Lowering, entry: &syn::Ident, cfgs: &[&syn::Attribute], dependent: bool) -> TokenStream {
    let Lowering { params, checks, rebuild, call } = lowering;
    let lowered = params.iter().map(|LoweredParam { ident, ty, .. }| quote!(#ident: #ty));
    let wait = if dependent {
        quote! {
            // Before anything touches memory: the kernel ahead of this one on the stream may
            // still be running (a programmatic launch), and its writes are visible only after
            // this wait. `launch_programmatic` exists only for kernels that have it.
            ::cohort::launch::wait_for_prior_grid();
        }
    } else {
        quote!()
    };
    quote! {
        #(#cfgs)*
        #[cfg(target_arch = "nvptx64")]
        #[unsafe(no_mangle)]
        #[allow(non_snake_case, clippy::too_many_arguments)]
        #[doc(hidden)]
        pub unsafe extern "ptx-kernel" fn #entry(#(#lowered),*) {
            #wait
            #(#checks)*
            #(#rebuild)*
            #call
        }
    }
}

/// The CPU device's entry of a kernel instance (`__cohort_cpu_<entry>`, a
/// `cohort_runtime::CpuEntry`): reads the same PTX parameters from a `cuLaunchKernel`-style
/// parameter array, then rebuilds the arguments and calls the body as the PTX entry does. The
/// runtime calls it once per CUDA thread inside a `cohort_cpu` launch.
fn cpu_entry(lowering: &Lowering, entry: &syn::Ident, cfgs: &[&syn::Attribute]) -> TokenStream {
    let Lowering { params, rebuild, call, .. } = lowering;
    let sym = format_ident!("__cohort_cpu_{}", entry);
    let array = format_ident!("__cohort_params");
    let reads = params.iter().enumerate().map(|(i, LoweredParam { ident, ty, addr })| {
        if *addr {
            // The launcher stores an address as the `u64` it got from the buffer (the value of
            // a `.u64` PTX parameter); the cast back to a pointer takes the provenance that
            // turning the allocation's pointer into that integer exposed, which reading the
            // integer's bytes as a pointer would not.
            quote! {
                let #ident: #ty =
                    ::core::ptr::read_unaligned((*#array.add(#i)).cast_const().cast::<u64>()) as usize as #ty;
            }
        } else {
            quote! {
                let #ident: #ty = ::core::ptr::read_unaligned((*#array.add(#i)).cast_const().cast::<#ty>());
            }
        }
    });
    let idents: Vec<&syn::Ident> = params.iter().map(|p| &p.ident).collect();
    let types: Vec<&TokenStream> = params.iter().map(|p| &p.ty).collect();
    let read = if params.is_empty() {
        quote! { let __cohort_slots = __CohortSlots(); }
    } else {
        quote! {
            // SAFETY: the caller's contract (`CpuEntry`'s): `#array` holds one valid pointer per
            // parameter of this entry, in this order, each to a value of the type read here
            // (addresses as `u64`). `read_unaligned` copies each value out without needing its
            // alignment; every type read is `Copy` (integers, pointers, `DeviceCopy` values),
            // so the caller keeps its own values untouched.
            let __cohort_slots = unsafe {
                #(#reads)*
                __CohortSlots(#(#idents,)*)
            };
        }
    };
    let doc = format!(
        "The CPU device's entry of `{entry}` (a `cohort_runtime::CpuEntry`): reads its {} PTX parameters from \
         `{array}` once, then runs the launch `spec` on the CPU engine, each CUDA thread rebuilding the kernel's \
         arguments and running the body (inlined into the engine's thread loop).",
        params.len()
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
            /// The launch's parameters, read once, shared by its CUDA threads.
            #[derive(Clone, Copy)]
            struct __CohortSlots(#(#types,)*);
            // SAFETY: the slots are integers, `DeviceCopy` values and addresses; every thread
            // only copies them out, and what the addresses point at is shared exactly as the
            // GPU entry's parameters are (the rebuild below is the PTX entry's).
            unsafe impl ::core::marker::Sync for __CohortSlots {}
            #read
            let __cohort_slots = &__cohort_slots;
            ::cohort::__cpu::launch_typed(__cohort_spec, &|| {
                let __CohortSlots(#(#idents,)*) = *__cohort_slots;
                #(#rebuild)*
                #call
            })
        }
    }
}

#[allow(clippy::too_many_arguments)] // one per piece of the instance the launcher is made from
fn host_impl(
    item: &ItemFn,
    params: &[Param],
    entry_str: &str,
    cooperative: bool,
    multi_grid: bool,
    dependent: bool,
    impl_args: &[TokenStream],
    cfgs: &[&syn::Attribute],
    subst: &dyn Fn(&dyn ToTokens) -> TokenStream,
    abi: &TokenStream,
    lowering: &Lowering,
) -> TokenStream {
    let name = &item.sig.ident;
    // The instance's CPU entry (`cpu_entry`), which `load` hands to the runtime with the kernel.
    let cpu_sym = format_ident!("__cohort_cpu_{}", entry_str);
    let mut host_params = Vec::new();
    let mut prep = Vec::new();
    let mut locals: Vec<TokenStream> = Vec::new();
    let mut multi_index: Option<usize> = None;
    let mut extra_uses: Vec<TokenStream> = Vec::new();
    let mut uses = Vec::new();
    let mut arg_docs = Vec::new();
    for p in params {
        let id = &p.ident;
        let attrs = &p.attrs;
        let ptr = format_ident!("__cohort_{}_ptr", id);
        let len = format_ident!("__cohort_{}_len", id);
        let ty_str = p.ty.to_token_stream().to_string();
        match &p.kind {
            ParamKind::Scalar => {
                let ty = subst(&p.ty);
                host_params.push(quote!(#(#attrs)* #id: #ty));
                prep.push(quote_spanned!(p.ty.span()=> ::cohort::abi::assert_device_copy::<#ty>();));
                locals.push(quote!(#id));
            }
            ParamKind::Slice(elem) => {
                let elem_s = subst(elem);
                host_params.push(quote!(#(#attrs)* #id: impl ::cohort_runtime::SliceArg<#elem_s>));
                prep.push(quote_spanned!(elem.span()=> ::cohort::abi::assert_slice_element::<#elem_s>();));
                prep.push(quote!(let (#ptr, #len): (u64, usize) = ::cohort_runtime::SliceArg::raw_parts(&#id);));
                {
                    let u0 = format_ident!("__cohort_{}_use0", id);
                    prep.push(quote!(let [#u0] = ::cohort_runtime::SliceArg::uses(&#id);));
                    uses.push(quote!(#u0));
                }
                locals.push(quote!(#ptr));
                locals.push(quote!(#len));
            }
            ParamKind::Disjoint(elem) => {
                let elem_s = subst(elem);
                host_params.push(quote!(#(#attrs)* #id: impl ::cohort_runtime::DisjointArg<#elem_s>));
                prep.push(quote_spanned!(elem.span()=> ::cohort::abi::assert_device_copy::<#elem_s>();));
                prep.push(quote!(let (#ptr, #len): (u64, usize) = ::cohort_runtime::DisjointArg::raw_parts(&#id);));
                {
                    let u0 = format_ident!("__cohort_{}_use0", id);
                    prep.push(quote!(let [#u0] = ::cohort_runtime::DisjointArg::uses(&#id);));
                    uses.push(quote!(#u0));
                }
                locals.push(quote!(#ptr));
                locals.push(quote!(#len));
            }
            ParamKind::Append(elem) => {
                let elem_s = subst(elem);
                let counter = format_ident!("__cohort_{}_counter", id);
                host_params.push(quote!(#(#attrs)* #id: impl ::cohort_runtime::AppendArg<#elem_s>));
                prep.push(quote_spanned!(elem.span()=> ::cohort::abi::assert_device_copy::<#elem_s>();));
                prep.push(quote!(let (#ptr, #len, #counter): (u64, usize, u64) = ::cohort_runtime::AppendArg::raw_parts(&#id);));
                {
                    let u0 = format_ident!("__cohort_{}_use0", id);
                    let u1 = format_ident!("__cohort_{}_use1", id);
                    prep.push(quote!(let [#u0, #u1] = ::cohort_runtime::AppendArg::uses(&#id);));
                    uses.push(quote!(#u0));
                    uses.push(quote!(#u1));
                }
                locals.push(quote!(#ptr));
                locals.push(quote!(#len));
                locals.push(quote!(#counter));
            }
            ParamKind::GridVec(elem) => {
                let elem_s = subst(elem);
                let barrier = format_ident!("__cohort_{}_barrier", id);
                host_params.push(quote!(#(#attrs)* #id: impl ::cohort_runtime::GridVecArg<#elem_s>));
                prep.push(quote_spanned!(elem.span()=> ::cohort::abi::assert_device_copy::<#elem_s>();));
                prep.push(quote!(let (#ptr, #len, #barrier): (u64, usize, u64) = ::cohort_runtime::GridVecArg::raw_parts(&#id);));
                {
                    let u0 = format_ident!("__cohort_{}_use0", id);
                    let u1 = format_ident!("__cohort_{}_use1", id);
                    prep.push(quote!(let [#u0, #u1] = ::cohort_runtime::GridVecArg::uses(&#id);));
                    uses.push(quote!(#u0));
                    uses.push(quote!(#u1));
                }
                locals.push(quote!(#ptr));
                locals.push(quote!(#len));
                locals.push(quote!(#barrier));
            }
            ParamKind::ConstPtr(elem) => {
                let elem_s = subst(elem);
                host_params.push(quote!(#(#attrs)* #id: ::cohort_runtime::DevicePtr<#elem_s>));
                prep.push(quote!(let #ptr: u64 = #id.addr();));
                locals.push(quote!(#ptr));
            }
            ParamKind::MutPtr(elem) => {
                let elem_s = subst(elem);
                host_params.push(quote!(#(#attrs)* #id: ::cohort_runtime::DevicePtrMut<#elem_s>));
                prep.push(quote!(let #ptr: u64 = #id.addr();));
                locals.push(quote!(#ptr));
            }
            ParamKind::Matrix(elem) | ParamKind::MatrixRef(elem) => {
                let elem_s = subst(elem);
                let cols = format_ident!("__cohort_{}_cols", id);
                // `DisjointMatrix` takes a `MatrixMut`, a read-only `Matrix` a `MatrixRef`.
                let arg = if matches!(p.kind, ParamKind::MatrixRef(_)) {
                    prep.push(quote_spanned!(elem.span()=> ::cohort::abi::assert_slice_element::<#elem_s>();));
                    quote!(::cohort_runtime::MatrixRefArg)
                } else {
                    prep.push(quote_spanned!(elem.span()=> ::cohort::abi::assert_device_copy::<#elem_s>();));
                    quote!(::cohort_runtime::MatrixArg)
                };
                host_params.push(quote!(#(#attrs)* #id: impl #arg<#elem_s>));
                prep.push(quote!(let (#ptr, #len, #cols): (u64, usize, usize) = #arg::raw_parts(&#id);));
                {
                    // A matrix whose offsets don't fit the parameter's index type (`u32`) is
                    // refused here: the device relies on it (`abi::disjoint_matrix`,
                    // `abi::matrix`).
                    let ty_s = subst(&p.ty);
                    let (pname, tname) = (id.to_string(), p.ty.to_token_stream().to_string());
                    prep.push(quote! {
                        if !::cohort::abi::matrix_shape_fits::<#ty_s>(#len, #cols) {
                            return ::core::result::Result::Err(::cohort_runtime::Error::matrix_too_large(
                                #entry_str, #pname, #tname, #len, #cols,
                            ));
                        }
                    });
                    // A `Within` layout's launch must stay inside the matrix: the device skips
                    // the bounds (`DisjointMatrix::tile`). Always true for other layouts.
                    prep.push(quote! {
                        if !::cohort::abi::matrix_launch_fits::<#ty_s>(
                            #len,
                            #cols,
                            [__cohort_config.grid.x, __cohort_config.grid.y, __cohort_config.grid.z],
                            [__cohort_config.block.x, __cohort_config.block.y, __cohort_config.block.z],
                        ) {
                            return ::core::result::Result::Err(::cohort_runtime::Error::matrix_overhang(
                                #entry_str, #pname, #tname, #len, #cols, &__cohort_config,
                            ));
                        }
                    });
                }
                {
                    let u0 = format_ident!("__cohort_{}_use0", id);
                    prep.push(quote!(let [#u0] = #arg::uses(&#id);));
                    uses.push(quote!(#u0));
                }
                locals.push(quote!(#ptr));
                locals.push(quote!(#len));
                locals.push(quote!(#cols));
            }
            ParamKind::MultiGridVec(elem) => {
                let elem_s = subst(elem);
                let table = format_ident!("__cohort_{}_table", id);
                let replicas = format_ident!("__cohort_{}_replicas", id);
                let barrier = format_ident!("__cohort_{}_barrier", id);
                let tag = format_ident!("__cohort_{}_tag", id);
                host_params.push(quote!(#(#attrs)* #id: impl ::cohort_runtime::MultiGridVecArg<#elem_s>));
                prep.push(quote_spanned!(elem.span()=> ::cohort::abi::assert_device_copy::<#elem_s>();));
                prep.push(quote! {
                    let (#ptr, #table, #len, #replicas, #barrier, #tag): (u64, u64, usize, u32, u64, u32) =
                        ::cohort_runtime::MultiGridVecArg::raw_parts(&#id, launch, stream)?;
                });
                extra_uses.push(quote!(__cohort_uses.extend(::cohort_runtime::MultiGridVecArg::uses(&#id, stream));));
                for l in [&ptr, &table, &len, &replicas, &barrier, &tag] {
                    locals.push(quote!(#l));
                }
            }
            ParamKind::MultiGrid => {
                // Filled in by `MultiGridLaunch::submit`: barrier block, rank, grid count.
                let words = format_ident!("__cohort_{}_words", id);
                let rank = format_ident!("__cohort_{}_rank", id);
                let grids = format_ident!("__cohort_{}_grids", id);
                prep.push(quote!(let #words: u64 = 0; let #rank: u32 = 0; let #grids: u32 = 0;));
                multi_index = Some(locals.len());
                locals.push(quote!(#words));
                locals.push(quote!(#rank));
                locals.push(quote!(#grids));
                continue;
            }
            ParamKind::Grid | ParamKind::Shape => continue,
        }
        arg_docs.push(format!("`{id}: {ty_str}`"));
    }
    let ptrs: Vec<TokenStream> =
        locals.iter().map(|l| quote!((&raw const #l).cast_mut().cast::<::core::ffi::c_void>())).collect();
    // Each local is of the type the entries read from its slot (an address as a `u64`): checked
    // by rustc, so the parameter array, the PTX entry and the CPU entry can't drift apart.
    assert_eq!(locals.len(), lowering.params.len(), "#[kernel]: launcher and entry disagree on the parameter count");
    let slot_checks: Vec<TokenStream> = locals
        .iter()
        .zip(&lowering.params)
        .map(|(l, LoweredParam { ty, addr, .. })| {
            let ty = if *addr { quote!(u64) } else { ty.clone() };
            quote!(let _: &#ty = &#l;)
        })
        .collect();
    let n = ptrs.len();
    let n_uses = uses.len();
    let unsafety = &item.sig.unsafety;
    let (launch, raw) = if cooperative {
        (format_ident!("launch_cooperative"), format_ident!("launch_cooperative_tracked"))
    } else {
        (format_ident!("launch"), format_ident!("launch_tracked"))
    };
    let ty_args = if impl_args.is_empty() { quote!() } else { quote!(<#(#impl_args),*>) };
    let launch_doc = format!(
        "Launches `{entry_str}` on `stream` with `config`{}. Arguments: {}.",
        if cooperative { " as a cooperative grid (every block resident at once; grid sync allowed)" } else { "" },
        if arg_docs.is_empty() { "none".to_string() } else { arg_docs.join(", ") }
    );
    let safety_doc = if unsafety.is_some() {
        quote! {
            ///
            /// # Safety
            /// The kernel is `unsafe fn`: its raw-pointer parameters must point at device memory
            /// valid for what the kernel does with them, and its own safety contract must hold.
        }
    } else {
        quote!()
    };
    let span = Span::call_site();
    let config = quote_spanned!(span=> config);
    let launcher = if multi_grid {
        let sizes: Vec<TokenStream> = locals.iter().map(|l| quote!(::core::mem::size_of_val(&#l))).collect();
        let multi = match multi_index {
            Some(i) => quote!(::core::option::Option::Some(#i)),
            None => quote!(::core::option::Option::None),
        };
        let add_doc = format!(
            "Adds the grid of `{entry_str}` on `stream`'s GPU to a multi-grid launch (its rank is that GPU's position \
             in the `MultiGrid`); nothing runs until `submit`. Arguments: {}.",
            if arg_docs.is_empty() { "none".to_string() } else { arg_docs.join(", ") }
        );
        quote! {
            #[doc = #add_doc]
            ///
            /// # Errors
            /// A stream of a GPU outside the launch's `MultiGrid`, or of a GPU that already has its
            /// grid. The rest (co-residency, configuration, operands) is checked by `submit`.
            #safety_doc
            #[allow(clippy::too_many_arguments)]
            pub #unsafety fn add_to<'g>(
                &'g self,
                launch: &mut ::cohort_runtime::MultiGridLaunch<'g>,
                stream: &'g ::cohort_runtime::Stream,
                #(#host_params),*
            ) -> ::core::result::Result<(), ::cohort_runtime::Error> {
                let __cohort_config: ::cohort_runtime::LaunchConfig = launch.config();
                #(#prep)*
                #(#slot_checks)*
                let __cohort_params: [*mut ::core::ffi::c_void; #n] = [#(#ptrs),*];
                let __cohort_sizes: [usize; #n] = [#(#sizes),*];
                #[allow(unused_mut)]
                let mut __cohort_uses: ::cohort_runtime::UseVec<'_> = ::cohort_runtime::UseVec::from([#(#uses),*]);
                #(#extra_uses)*
                // SAFETY: the parameter array matches the entry point's PTX signature, which
                // `#[kernel]` generated from the same declaration, each pointing at a local of
                // the recorded size (copied before this returns); every argument's type was
                // checked above; the uses are the memory those arguments name.
                unsafe { launch.add_tracked(&self.function, stream, &__cohort_params, &__cohort_sizes, #multi, &__cohort_uses) }
            }
        }
    } else {
        let method = |launch: &syn::Ident, raw: &syn::Ident, doc: &str, extra_doc: TokenStream| {
            quote! {
                #[doc = #doc]
                #extra_doc
                ///
                /// # Errors
                /// An impossible configuration (block too large, too much shared memory, a
                /// cooperative grid that cannot be co-resident) is refused before launching, naming
                /// the kernel and the limit; driver errors are returned as they come.
                #safety_doc
                #[allow(clippy::too_many_arguments)]
                pub #unsafety fn #launch(
                    &self,
                    stream: &::cohort_runtime::Stream,
                    #config: impl ::core::convert::Into<::cohort_runtime::LaunchConfig>,
                    #(#host_params),*
                ) -> ::core::result::Result<(), ::cohort_runtime::Error> {
                    let __cohort_config: ::cohort_runtime::LaunchConfig = #config.into();
                    #(#prep)*
                    #(#slot_checks)*
                    let mut __cohort_params: [*mut ::core::ffi::c_void; #n] = [#(#ptrs),*];
                    let __cohort_uses: [::cohort_runtime::Use<'_>; #n_uses] = [#(#uses),*];
                    // SAFETY: the parameter array matches the entry point's PTX signature, which
                    // `#[kernel]` generated from the same declaration; every argument's type was
                    // checked above, and the pointed-to locals outlive the launch call. The uses
                    // are the memory those arguments name, for stream ordering.
                    unsafe { self.function.#raw(stream, __cohort_config, &mut __cohort_params, &__cohort_uses) }
                }
            }
        };
        let mut methods = method(&launch, &raw, &launch_doc, quote!());
        if dependent {
            let doc = format!(
                "Launches `{entry_str}` on `stream` with `config` as a programmatic dependent launch: it may \
                 begin while the kernel before it on `stream` is still finishing (on sm_90 and later; elsewhere \
                 it is an ordinary launch). Arguments: {}.",
                if arg_docs.is_empty() { "none".to_string() } else { arg_docs.join(", ") }
            );
            let extra = quote! {
                ///
                /// The kernel is `#[kernel(dependent)]`: its entry waits (`griddepcontrol.wait`) until
                /// the kernel before it has completed and its writes are visible, before any of its
                /// body runs, so the result is the result of `launch`. What overlaps is the launch
                /// itself: this grid is scheduled while the one before finishes (sooner still if that
                /// one calls `cohort::launch::launch_dependents()`).
            };
            methods.extend(method(
                &format_ident!("launch_programmatic"),
                &format_ident!("launch_programmatic_tracked"),
                &doc,
                extra,
            ));
        }
        methods
    };
    quote! {
        #(#cfgs)*
        #[cfg(not(target_arch = "nvptx64"))]
        impl #name #ty_args {
            /// Name of the PTX entry point.
            pub const NAME: &'static str = #entry_str;
            /// Whether the kernel must be launched cooperatively.
            pub const COOPERATIVE: bool = #cooperative;
            /// Whether the kernel is `#[kernel(dependent)]` (it has `launch_programmatic`).
            pub const DEPENDENT: bool = #dependent;
            /// The kernel's ABI as this launcher was compiled: checked at `load` against the
            /// record the device side wrote into the module and against the entry's parameters.
            pub const ABI: &'static [u8] = &#abi;

            /// Looks the kernel up in `module`, checks that its entry was built from the same
            /// declaration as this launcher (parameter count, each parameter's kind, size and
            /// alignment, cooperative or not), and reads its attributes. The function carries this
            /// instance's host entry, which the CPU device runs.
            ///
            /// # Errors
            /// If the module has no entry point of this name, or its entry disagrees with this
            /// launcher ([`Error::AbiMismatch`](::cohort_runtime::Error::AbiMismatch), naming the
            /// first difference).
            pub fn load(module: &::cohort_runtime::Module) -> ::core::result::Result<Self, ::cohort_runtime::Error> {
                // SAFETY: `#cpu_sym` is this instance's host entry, generated from the same
                // declaration as the PTX entry `Self::NAME` and the ABI record `Self::ABI`.
                let function = unsafe { module.kernel_with_entry(Self::NAME, Self::COOPERATIVE, Self::ABI, #cpu_sym) }?;
                ::core::result::Result::Ok(Self {
                    function,
                    _marker: ::core::marker::PhantomData,
                })
            }

            /// The loaded function: attributes, occupancy, launch-configuration helpers.
            pub fn function(&self) -> &::cohort_runtime::Function {
                &self.function
            }

            #launcher
        }
    }
}

/// The device-side launcher of one kernel instance (`cohort::launch`): the same parameter kinds
/// as the host launcher, lowered into a CDP2 parameter buffer in the order of the entry's
/// `.param` list. Stream bounds keep what a concurrent child could race on (plain slices,
/// `DisjointSlice`s) to tail launches. Kernels with parameters the device runtime cannot pass
/// yet get none.
fn device_launcher(
    item: &ItemFn,
    params: &[Param],
    entry: &syn::Ident,
    impl_args: &[TokenStream],
    cfgs: &[&syn::Attribute],
    subst: &dyn Fn(&dyn ToTokens) -> TokenStream,
) -> TokenStream {
    let name = &item.sig.ident;
    // The instance's CPU entry (`cpu_entry`), which the CPU device runs the child with.
    let cpu_sym = format_ident!("__cohort_cpu_{}", entry);
    let entry_str = entry.to_string();
    let mut dev_params = Vec::new();
    let mut bounds = Vec::new();
    let mut checks = Vec::new();
    let mut pushes = Vec::new();
    let mut arg_docs = Vec::new();
    for (index, p) in params.iter().enumerate() {
        let id = &p.ident;
        let index = index as u32;
        let ty_str = p.ty.to_token_stream().to_string();
        match &p.kind {
            ParamKind::Scalar => {
                let ty = subst(&p.ty);
                dev_params.push(quote!(#id: #ty));
                pushes.push(quote!(__cohort_buf.push::<#ty>(#id);));
            }
            ParamKind::Slice(elem) => {
                let elem_s = subst(elem);
                dev_params.push(quote!(#id: &[#elem_s]));
                bounds.push(quote!(S: ::cohort::launch::SharesSlice<#elem_s>));
                checks.push(quote!(::cohort::launch::check_global::<#elem_s>(#id, #index)?;));
                pushes.push(quote! {
                    __cohort_buf.push::<u64>(#id.as_ptr() as u64);
                    __cohort_buf.push::<usize>(#id.len());
                });
            }
            ParamKind::Disjoint(elem) => {
                let elem_s = subst(elem);
                let parts = format_ident!("__cohort_{}_parts", id);
                dev_params.push(quote!(#id: impl ::cohort::launch::ChildDisjoint<#elem_s>));
                bounds.push(quote!(S: ::cohort::launch::AfterParent));
                checks.push(quote! {
                    let #parts: (*mut #elem_s, usize) = ::cohort::launch::ChildDisjoint::into_raw_parts(#id);
                    ::cohort::launch::check_global_ptr::<#elem_s>(#parts.0, #parts.1, #index)?;
                });
                pushes.push(quote! {
                    __cohort_buf.push::<u64>(#parts.0 as u64);
                    __cohort_buf.push::<usize>(#parts.1);
                });
            }
            ParamKind::ConstPtr(elem) => {
                let elem_s = subst(elem);
                dev_params.push(quote!(#id: *const #elem_s));
                pushes.push(quote!(__cohort_buf.push::<u64>(#id as u64);));
            }
            ParamKind::MutPtr(elem) => {
                let elem_s = subst(elem);
                dev_params.push(quote!(#id: *mut #elem_s));
                pushes.push(quote!(__cohort_buf.push::<u64>(#id as u64);));
            }
            ParamKind::Shape => {
                let ty = subst(&p.ty);
                checks.push(quote!(::cohort::launch::check_shape(config, <#ty>::DIMS)?;));
                continue;
            }
            ParamKind::Append(_)
            | ParamKind::GridVec(_)
            | ParamKind::Matrix(_)
            | ParamKind::MatrixRef(_)
            | ParamKind::Grid
            | ParamKind::MultiGrid
            | ParamKind::MultiGridVec(_) => {
                return TokenStream::new();
            }
        }
        arg_docs.push(format!("`{id}: {ty_str}`"));
    }
    let unsafety = &item.sig.unsafety;
    let ty_args = if impl_args.is_empty() { quote!() } else { quote!(<#(#impl_args),*>) };
    let doc = format!(
        "Launches `{entry}` from device code (dynamic parallelism, CDP2) with `config` into `stream` \
         (`TailLaunch`, `FireAndForget` or `BlockStream`; see `cohort::launch` for when each runs and \
         what the child sees). Arguments: {}.",
        if arg_docs.is_empty() { "none".to_string() } else { arg_docs.join(", ") }
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
            pub #unsafety fn launch_from_device<S: ::cohort::launch::DeviceStream>(
                config: &::cohort::launch::LaunchConfig,
                stream: S,
                #(#dev_params),*
            ) -> ::core::result::Result<(), ::cohort::launch::LaunchError>
            where
                #(#bounds,)*
            {
                #(#checks)*
                #[cfg(target_arch = "nvptx64")]
                let __cohort_entry = #entry as *const () as u64;
                // On the CPU device: the instance's host entry (`cpu_entry`) and its name.
                #[cfg(not(target_arch = "nvptx64"))]
                let __cohort_entry = ::cohort::launch::HostEntry::new(#cpu_sym, #entry_str);
                // SAFETY: `__cohort_entry` is the entry `#[kernel]` generated from this declaration,
                // and the pushes below write its `.param`s in order, each as the type the entry
                // lowers it to.
                let mut __cohort_buf = unsafe { ::cohort::launch::ParamBuffer::new(__cohort_entry, config) }?;
                // SAFETY: as above; the arguments passed what their stream requires (the bounds on
                // `S`: racy memory only in tail launches) and the global-memory checks above.
                unsafe {
                    #(#pushes)*
                }
                __cohort_buf.launch(stream)
            }
        }
    }
}

/// Replaces generic parameter names with an instance's arguments, token by token.
fn substitute(ts: TokenStream, map: &HashMap<String, TokenStream>) -> TokenStream {
    if map.is_empty() {
        return ts;
    }
    ts.into_iter()
        .map(|tt| match tt {
            TokenTree::Ident(i) if map.contains_key(&i.to_string()) => {
                let mut g = Group::new(Delimiter::None, map[&i.to_string()].clone());
                g.set_span(i.span());
                TokenTree::Group(g)
            }
            TokenTree::Group(g) => {
                let mut ng = Group::new(g.delimiter(), substitute(g.stream(), map));
                ng.set_span(g.span());
                TokenTree::Group(ng)
            }
            other => other,
        })
        .collect()
}

/// An identifier-safe spelling of an instance argument: `[u8; 4]` → `u8_4`.
fn sanitize(s: &str) -> String {
    let mut out = String::new();
    for c in s.chars() {
        if c.is_ascii_alphanumeric() {
            out.push(c);
        } else if !out.ends_with('_') {
            out.push('_');
        }
    }
    out.trim_matches('_').to_string()
}
