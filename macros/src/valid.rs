//! Checks that the macro can do without type information. Type-level checks (that a by-value
//! parameter is `DeviceCopy`, …) are emitted as trait bounds spanned on the parameter.

use crate::ast::{Param, ParamKind};
use crate::attr::KernelAttr;
use syn::{GenericParam, ItemFn};

pub fn kernel(item: &ItemFn, attr: &KernelAttr, params: &[Param]) -> syn::Result<()> {
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
    let mut grid_params = 0;
    let mut multi_params = 0;
    let mut shape_params = 0;
    for p in params {
        match &p.kind {
            ParamKind::ConstPtr(_) | ParamKind::MutPtr(_) if sig.unsafety.is_none() => {
                return Err(syn::Error::new_spanned(
                    &p.ty,
                    "raw pointer parameters make a kernel `unsafe`: declare it `unsafe fn` (its launcher is then `unsafe` too), \
                     or take `&[T]` / `DisjointSlice<T>`",
                ));
            }
            ParamKind::Grid => {
                grid_params += 1;
                if attr.cooperative.is_none() && attr.multi_grid.is_none() {
                    return Err(syn::Error::new_spanned(
                        &p.ty,
                        "a `GridGroup` parameter (grid sync) needs `#[kernel(cooperative)]`, so that the host launches this kernel \
                         only cooperatively; use `cg::this_grid()` for grid ranks without sync",
                    ));
                }
                if grid_params > 1 {
                    return Err(syn::Error::new_spanned(&p.ty, "one `GridGroup` parameter is enough"));
                }
            }
            ParamKind::MultiGrid => {
                multi_params += 1;
                if attr.multi_grid.is_none() {
                    return Err(syn::Error::new_spanned(
                        &p.ty,
                        "a `MultiGridGroup` parameter needs `#[kernel(multi_grid)]`, so that the host launches this kernel \
                         only on every GPU of a `MultiGrid` at once",
                    ));
                }
                if multi_params > 1 {
                    return Err(syn::Error::new_spanned(&p.ty, "one `MultiGridGroup` parameter is enough"));
                }
            }
            ParamKind::MultiGridVec(_) if attr.multi_grid.is_none() => {
                return Err(syn::Error::new_spanned(
                    &p.ty,
                    "a `MultiGridVec` parameter needs `#[kernel(multi_grid)]` (its phases are multi-grid barriers); \
                     within one GPU use a `GridVec`",
                ));
            }
            ParamKind::Shape => {
                shape_params += 1;
                if shape_params > 1 {
                    return Err(syn::Error::new_spanned(&p.ty, "one `BlockShape` parameter is enough"));
                }
            }
            _ => {}
        }
    }
    if shape_params == 0
        && let Some(p) = params.iter().find(|p| matches!(p.kind, ParamKind::Matrix(_)))
    {
        return Err(syn::Error::new_spanned(
            &p.ty,
            "a `DisjointMatrix` is divided among threads by the block shape: the kernel also needs a \
             `shape: BlockShape<X, Y>` parameter (its launcher then checks the block shape)",
        ));
    }
    Ok(())
}
