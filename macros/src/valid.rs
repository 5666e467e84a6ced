//! Checks that the macro can do without type information: the signature and the options.
//! What depends on a parameter's kind (that a by-value parameter is `DeviceCopy`, that a
//! `GridGroup` needs `cooperative`, that raw pointers need `unsafe fn`, …) is checked by rustc
//! on the emitted code, from `cohort::abi::KernelParam` (`expand/checks.rs`), spanned on the
//! parameter's type: so it holds for type aliases too.

use crate::attr::KernelAttr;
use syn::{GenericParam, ItemFn};

pub fn kernel(item: &ItemFn, attr: &KernelAttr) -> syn::Result<()> {
    let sig = &item.sig;
    if let Some(c) = &sig.constness {
        return Err(syn::Error::new_spanned(c, "a kernel cannot be a `const fn`"));
    }
    if let Some(a) = &sig.asyncness {
        return Err(syn::Error::new_spanned(a, "a kernel cannot be `async`"));
    }
    if let Some(abi) = &sig.abi {
        return Err(syn::Error::new_spanned(
            abi,
            "do not give a kernel an ABI: `#[kernel]` adds `extern \"ptx-kernel\"` itself",
        ));
    }
    if let Some(v) = &sig.variadic {
        return Err(syn::Error::new_spanned(v, "a kernel cannot be variadic"));
    }
    if let syn::ReturnType::Type(_, ty) = &sig.output {
        let unit = matches!(&**ty, syn::Type::Tuple(t) if t.elems.is_empty());
        if !unit {
            return Err(syn::Error::new_spanned(
                ty,
                "a kernel cannot return a value: write results into a `DisjointSlice<T>` or an atomic parameter",
            ));
        }
    }

    let generic: Vec<&GenericParam> =
        sig.generics.params.iter().filter(|g| !matches!(g, GenericParam::Lifetime(_))).collect();
    match (&attr.instances, generic.is_empty()) {
        (None, false) => {
            return Err(syn::Error::new_spanned(
                &sig.generics,
                "a generic kernel needs its instances, e.g. `#[kernel(instances(f32, f64))]`: \
                 the GPU module must contain a concrete entry point for each",
            ));
        }
        (Some((key, _)), true) => {
            return Err(syn::Error::new_spanned(
                key,
                "`instances(...)` is for generic kernels; this one has no type or const parameters",
            ));
        }
        (Some((_, insts)), false) => {
            for inst in insts {
                if inst.args.len() != generic.len() {
                    return Err(syn::Error::new_spanned(
                        &inst.span_tokens,
                        format!(
                            "this instance gives {} generic argument(s); the kernel has {} (write several as a tuple: `(f32, 4)`)",
                            inst.args.len(),
                            generic.len()
                        ),
                    ));
                }
            }
        }
        (None, true) => {}
    }

    if let (Some(c), true) = (&attr.cluster, attr.multi_grid.is_some() || attr.dependent.is_some()) {
        return Err(syn::Error::new_spanned(
            c,
            "a `cluster` kernel cannot be `multi_grid` or `dependent` (not supported yet: their launches have no \
             cluster dimension)",
        ));
    }
    if let (Some(_), Some(c)) = (&attr.multi_grid, &attr.cooperative) {
        return Err(syn::Error::new_spanned(
            c,
            "`multi_grid` kernels are cooperative on every GPU already: drop `cooperative`",
        ));
    }
    if let Some(d) = &attr.dependent
        && (attr.cooperative.is_some() || attr.multi_grid.is_some())
    {
        return Err(syn::Error::new_spanned(
            d,
            "a `dependent` kernel cannot be `cooperative` or `multi_grid`: a programmatic launch may begin while the \
             kernel before it still holds SMs, which a grid that must be resident all at once cannot share",
        ));
    }
    Ok(())
}

/// The kernel's launch bounds as `[max threads per block, min blocks per SM, max registers per
/// thread]`, 0 where not given (`#[kernel(launch_bounds(..), max_registers(..))]`), each
/// checked against what PTX and the hardware allow.
pub fn launch_bounds(attr: &KernelAttr) -> syn::Result<[u32; 3]> {
    let value = |lit: &syn::LitInt, what: &str, lo: u32, hi: u32| -> syn::Result<u32> {
        match lit.base10_parse::<u32>() {
            Ok(v) if (lo..=hi).contains(&v) => Ok(v),
            _ => Err(syn::Error::new_spanned(lit, format!("{what} must be between {lo} and {hi}"))),
        }
    };
    let mut out = [0; 3];
    if let Some((_, threads, blocks)) = &attr.launch_bounds {
        out[0] = value(threads, "`launch_bounds`' most threads per block", 1, 1024)?;
        if let Some(b) = blocks {
            out[1] = value(b, "`launch_bounds`' fewest blocks per SM", 1, 32)?;
        }
    }
    if let Some((key, n)) = &attr.max_registers {
        out[2] = value(n, "`max_registers`", 16, 255)?;
        if out[1] != 0 {
            return Err(syn::Error::new_spanned(
                key,
                "`max_registers` and `launch_bounds`' blocks per SM both set the register budget (as CUDA C++'s \
                 `__maxnreg__` and `__launch_bounds__(threads, blocks)` cannot be combined): give one",
            ));
        }
    }
    Ok(out)
}
