//! The host side of a kernel instance: `NAME`, `ABI`, `load`, and the typed launchers
//! (`launch`, `launch_cooperative`, `launch_programmatic`, or a multi-grid kernel's `add_to`).
//!
//! Each launcher takes one argument per parameter that is not made on the device,
//! `impl KernelArg<ArgKeyFn<fn(P)>>` (`fn(P)`: `cohort::abi::ParamFn`, a parameter type whose
//! elided lifetimes `impl Trait` would refuse), and does the same for each: its parts (`KernelArg::parts`,
//! the kind's launch checks) into the parameter array, at the offset of the parameter's first
//! PTX part, and its memory (`KernelArg::uses`) into the operands the tracker orders the launch
//! by. No allocation on a single-GPU launch: the array and the operands have sizes fixed by the
//! parameter kinds.

use proc_macro2::TokenStream;
use quote::{ToTokens, format_ident, quote, quote_spanned};
use syn::spanned::Spanned;

use super::{Instance, Kernel, arg_docs, generics::call_site};

/// The `impl` block of the kernel's struct for one instance.
pub(super) fn host_impl(k: &Kernel<'_>, inst: &Instance, abi: &TokenStream) -> TokenStream {
    let (name, cfgs, impl_args) = (&k.item.sig.ident, &k.cfgs, &inst.impl_args);
    let entry_str = inst.entry.to_string();
    // The instance's CPU entry (`cpu_entry`), which `load` hands to the runtime with the kernel.
    let cpu_sym = format_ident!("__cohort_cpu_{}", inst.entry);
    let (cooperative, dependent, cluster) = (k.cooperative, k.dependent, k.cluster);
    let ty_args = if impl_args.is_empty() { quote!() } else { quote!(<#(#impl_args),*>) };
    let launcher = if k.multi_grid { multi_grid_launcher(k, inst) } else { single_gpu_launchers(k, inst) };
    quote! {
        #(#cfgs)*
        #[cfg(not(target_arch = "nvptx64"))]
        impl #name #ty_args {
            /// Name of the PTX entry point.
            pub const NAME: &'static str = #entry_str;
            /// Whether the kernel must be launched cooperatively.
            pub const COOPERATIVE: bool = #cooperative;
            /// Whether the kernel is `#[kernel(cluster)]` (it may be launched in clusters of
            /// several blocks: `LaunchConfig::with_cluster`).
            pub const CLUSTER: bool = #cluster;
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

/// What every launcher of an instance is made of.
struct Args {
    /// The launcher's parameters: one `impl KernelArg<…>` per parameter not made on the device.
    params: Vec<TokenStream>,
    /// Statements making each parameter's `ArgContext` and parts (`?` on a refused argument).
    parts: Vec<TokenStream>,
    /// Statements writing pointers to the parts into `__cohort_params` (and, for a multi-grid
    /// grid, their sizes into `__cohort_sizes`).
    slots: Vec<TokenStream>,
    /// Statements pushing each argument's operands into `__cohort_uses`.
    uses: Vec<TokenStream>,
}

/// The arguments of an instance's launchers. `multi`: the parameter array is a multi-grid
/// grid's (its contexts carry the launch and the stream; sizes are recorded too).
fn args(k: &Kernel<'_>, inst: &Instance, multi: bool) -> Args {
    let entry_str = inst.entry.to_string();
    let mut a = Args { params: Vec::new(), parts: Vec::new(), slots: Vec::new(), uses: Vec::new() };
    for (i, (p, ty)) in k.params.iter().zip(&inst.tys).enumerate() {
        let (id, attrs) = (&p.ident, &p.attrs);
        let cx = format_ident!("__cohort_{}_cx", id);
        let parts = format_ident!("__cohort_{}_parts", id);
        // The parameter type as a function-pointer type (`cohort::abi::ParamFn`): its elided
        // lifetimes are allowed there, where `impl Trait` would refuse them.
        let f = quote_spanned!(p.ty.span()=> fn(#ty));
        let key = quote!(::cohort::abi::ArgKeyFn<#f>);
        // Made on the device: no argument; `()` gives its parts (none, or what the launch fills).
        let arg = if p.made_on_device {
            quote!(())
        } else {
            a.params.push(quote_spanned! {p.ty.span()=>
                #(#attrs)* #id: impl ::cohort_runtime::KernelArg<#key, Parts = ::cohort::abi::HostPartsFn<#f>>
            });
            quote!(#id)
        };
        let (pname, tname) = (id.to_string(), p.ty.to_token_stream().to_string());
        let with_multi = if multi { quote!(.multi_grid(launch, stream)) } else { quote!() };
        a.parts.push(quote_spanned!(p.ty.span()=> ::cohort::abi::check_param::<#ty>();));
        a.parts.push(quote! {
            let #cx = ::cohort_runtime::ArgContext::new(#entry_str, #pname, #tname, &__cohort_config) #with_multi;
            let #parts = ::cohort_runtime::arg_parts::<#f, _>(&#arg, &#cx)?;
        });
        let at = inst.offset(i);
        a.slots.push(quote!(::cohort::abi::HostParts::pointers(&#parts, &mut __cohort_params[#at..]);));
        if multi {
            a.slots.push(quote! {
                <::cohort::abi::HostPartsFn<#f> as ::cohort::abi::HostParts>::sizes(&mut __cohort_sizes[#at..]);
                if <#ty as ::cohort::abi::KernelParam>::FILLED_BY_MULTI_GRID && __cohort_multi.is_none() {
                    __cohort_multi = ::core::option::Option::Some(#at);
                }
            });
        }
        a.uses.push(quote! {
            ::cohort_runtime::KernelArg::<#key>::uses(&#arg, &#cx, &mut __cohort_uses);
        });
    }
    a
}

/// `# Safety` of an `unsafe fn` kernel's launchers.
fn safety_doc(k: &Kernel<'_>) -> TokenStream {
    if k.item.sig.unsafety.is_some() {
        quote! {
            ///
            /// # Safety
            /// The kernel is `unsafe fn`: its raw-pointer parameters must point at device memory
            /// valid for what the kernel does with them, and its own safety contract must hold.
        }
    } else {
        quote!()
    }
}

/// `launch` (or `launch_cooperative`), and `launch_programmatic` for a `dependent` kernel.
fn single_gpu_launchers(k: &Kernel<'_>, inst: &Instance) -> TokenStream {
    let entry_str = inst.entry.to_string();
    let Args { params, parts, slots, uses } = args(k, inst, false);
    let (n, tys) = (inst.part_total(), &inst.tys);
    let (unsafety, safety_doc) = (&k.item.sig.unsafety, safety_doc(k));
    let config = quote_spanned!(call_site()=> config);
    let docs = arg_docs(k.params);
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
                #(#params),*
            ) -> ::core::result::Result<(), ::cohort_runtime::Error> {
                let __cohort_config: ::cohort_runtime::LaunchConfig = #config.into();
                #(#parts)*
                const __COHORT_N: usize = #n;
                const __COHORT_USES: usize = ::cohort::abi::sum(&[#(<#tys as ::cohort::abi::KernelParam>::USES),*]);
                let mut __cohort_params: [*mut ::core::ffi::c_void; __COHORT_N] = [::core::ptr::null_mut(); __COHORT_N];
                #(#slots)*
                let mut __cohort_uses = ::cohort_runtime::UseArray::<'_, __COHORT_USES>::new();
                #(#uses)*
                // SAFETY: the parameter array holds each argument's PTX parts, in the order and
                // of the types of the entry's `.param`s (the parts' types are the kinds', which
                // `load` checked against the entry's ABI record); the pointed-to locals outlive
                // the launch call. The uses are the memory those arguments name, for stream
                // ordering.
                unsafe { self.function.#raw(stream, __cohort_config, &mut __cohort_params, __cohort_uses.as_slice()) }
            }
        }
    };
    let (launch, raw, how) = if k.cooperative {
        (
            "launch_cooperative",
            "launch_cooperative_tracked",
            " as a cooperative grid (every block resident at once; grid sync allowed)",
        )
    } else {
        ("launch", "launch_tracked", "")
    };
    let doc = format!("Launches `{entry_str}` on `stream` with `config`{how}. Arguments: {docs}.");
    let mut methods = method(&format_ident!("{}", launch), &format_ident!("{}", raw), &doc, quote!());
    if k.dependent {
        let doc = format!(
            "Launches `{entry_str}` on `stream` with `config` as a programmatic dependent launch: it may \
             begin while the kernel before it on `stream` is still finishing (on sm_90 and later; elsewhere \
             it is an ordinary launch). Arguments: {docs}."
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
}

/// A multi-grid kernel's `add_to`: one grid of a `MultiGridLaunch`.
fn multi_grid_launcher(k: &Kernel<'_>, inst: &Instance) -> TokenStream {
    let entry_str = inst.entry.to_string();
    let Args { params, parts, slots, uses } = args(k, inst, true);
    let n = inst.part_total();
    let (unsafety, safety_doc) = (&k.item.sig.unsafety, safety_doc(k));
    let add_doc = format!(
        "Adds the grid of `{entry_str}` on `stream`'s GPU to a multi-grid launch (its rank is that GPU's position \
         in the `MultiGrid`); nothing runs until `submit`. Arguments: {}.",
        arg_docs(k.params)
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
            #(#params),*
        ) -> ::core::result::Result<(), ::cohort_runtime::Error> {
            let __cohort_config: ::cohort_runtime::LaunchConfig = launch.config();
            #(#parts)*
            const __COHORT_N: usize = #n;
            let mut __cohort_params: [*mut ::core::ffi::c_void; __COHORT_N] = [::core::ptr::null_mut(); __COHORT_N];
            let mut __cohort_sizes: [usize; __COHORT_N] = [0; __COHORT_N];
            let mut __cohort_multi: ::core::option::Option<usize> = ::core::option::Option::None;
            #(#slots)*
            let mut __cohort_uses: ::cohort_runtime::UseVec<'_> = ::cohort_runtime::UseVec::new();
            #(#uses)*
            // SAFETY: the parameter array holds each argument's PTX parts, in the order and of
            // the types of the entry's `.param`s (checked by `load` against the ABI record), each
            // pointing at a local of the recorded size (copied before this returns); the
            // `MultiGridGroup`'s parts, if any, are at `__cohort_multi`; the uses are the memory
            // those arguments name.
            unsafe { launch.add_tracked(&self.function, stream, &__cohort_params, &__cohort_sizes, __cohort_multi, &__cohort_uses) }
        }
    }
}
