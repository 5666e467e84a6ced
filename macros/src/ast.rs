//! The kernel function as the macro sees it: its parameters, by name and type.
//!
//! What a parameter's type *is* (how it crosses the kernel ABI) is not decided here: the code
//! `#[kernel]` emits is generic over `cohort::abi::KernelParam` (device side) and
//! `cohort_runtime::KernelArg` (host side), so rustc resolves it, type aliases included. The
//! macro only refuses the shapes of type no kind can be (`&mut`, tuples, `impl Trait`, …), with
//! a message saying what to write instead, and notes which parameters are made on the device
//! (see [`Param::made_on_device`]).

use syn::{FnArg, Ident, ItemFn, Pat, Type};

pub struct Param {
    pub attrs: Vec<syn::Attribute>,
    pub ident: Ident,
    pub ty: Type,
    /// Written as `GridGroup`, `MultiGridGroup` or `BlockShape<…>`: made on the device, so the
    /// launchers take no argument for it. The one thing read from a type's name, because it
    /// decides the launchers' signatures, which can't depend on a trait; the emitted code
    /// checks it against `KernelParam::MADE_ON_DEVICE` both ways (an alias of one of these is
    /// refused with a message, a type of another kind so named too).
    pub made_on_device: bool,
}

/// Parses the parameters; shape errors (patterns, `self`, `&mut`) are reported here.
pub fn params(item: &ItemFn) -> syn::Result<Vec<Param>> {
    let mut out = Vec::new();
    for input in &item.sig.inputs {
        let pt = match input {
            FnArg::Receiver(r) => {
                return Err(syn::Error::new_spanned(r, "a kernel cannot take `self`: make it a free function"));
            }
            FnArg::Typed(pt) => pt,
        };
        let ident = match &*pt.pat {
            Pat::Ident(pi) if pi.by_ref.is_none() && pi.subpat.is_none() => pi.ident.clone(),
            other => {
                return Err(syn::Error::new_spanned(
                    other,
                    "kernel parameters must be plain names (`x: T` or `mut x: T`), not patterns",
                ));
            }
        };
        refuse_shape(&pt.ty)?;
        let made_on_device = made_on_device(&pt.ty);
        out.push(Param { attrs: pt.attrs.clone(), ident, ty: (*pt.ty).clone(), made_on_device });
    }
    Ok(out)
}

/// The shapes of type that no parameter kind has, refused with what to write instead.
fn refuse_shape(ty: &Type) -> syn::Result<()> {
    match ty {
        Type::Reference(r) => {
            if let Some(m) = &r.mutability {
                let what = if matches!(&*r.elem, Type::Slice(_)) { "`&mut [T]`" } else { "`&mut T`" };
                return Err(syn::Error::new_spanned(
                    m,
                    format!(
                        "{what} cannot be a kernel parameter: every thread of the launch would share it. \
                         Use `DisjointSlice<T>` for per-thread outputs or `&[AtomicU32]` (any atomic) for shared counters"
                    ),
                ));
            }
            match &*r.elem {
                Type::Slice(_) => Ok(()),
                _ => Err(syn::Error::new_spanned(
                    ty,
                    "a reference to one value cannot be a kernel parameter: pass `T` by value (`T: DeviceCopy`) or a slice `&[T]`",
                )),
            }
        }
        Type::Tuple(t) if !t.elems.is_empty() => Err(syn::Error::new_spanned(
            ty,
            "a tuple has no stable layout, so it cannot cross to the GPU: use a `#[repr(C)]` struct with `#[derive(DeviceCopy)]`",
        )),
        Type::ImplTrait(_) => Err(syn::Error::new_spanned(
            ty,
            "`impl Trait` cannot be a kernel parameter: a kernel needs concrete types (use a generic with `#[kernel(instances(...))]`)",
        )),
        Type::TraitObject(_) | Type::BareFn(_) => {
            Err(syn::Error::new_spanned(ty, "trait objects and function pointers cannot cross between host and device"))
        }
        Type::Slice(_) => Err(syn::Error::new_spanned(ty, "a bare slice has no size: use `&[T]`")),
        Type::Paren(p) => refuse_shape(&p.elem),
        Type::Group(g) => refuse_shape(&g.elem),
        _ => Ok(()),
    }
}

/// Whether the type is written as one of the parameters made on the device.
fn made_on_device(ty: &Type) -> bool {
    match ty {
        Type::Path(tp) if tp.qself.is_none() => tp
            .path
            .segments
            .last()
            .is_some_and(|s| matches!(s.ident.to_string().as_str(), "GridGroup" | "MultiGridGroup" | "BlockShape")),
        Type::Paren(p) => made_on_device(&p.elem),
        Type::Group(g) => made_on_device(&g.elem),
        _ => false,
    }
}
