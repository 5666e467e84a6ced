//! The kernel function as the macro sees it: parameters classified by how they cross the
//! kernel ABI.

use syn::{FnArg, Ident, ItemFn, Pat, Type};

/// How a parameter crosses the kernel ABI (see `cohort::abi`).
pub enum ParamKind {
    /// `T` by value.
    Scalar,
    /// `&[T]`: pointer and length.
    Slice(Type),
    /// `DisjointSlice<T>`: pointer and length.
    Disjoint(Type),
    /// `AppendSlice<T>`: pointer, capacity and counter pointer.
    Append(Type),
    /// `GridVec<T>`: pointer, length and barrier-word pointer.
    GridVec(Type),
    /// `*const T`.
    ConstPtr(Type),
    /// `*mut T`.
    MutPtr(Type),
    /// `GridGroup`: made on the device, not passed.
    Grid,
    /// `MultiGridGroup`: the barrier block, the grid's rank and the number of grids, passed by
    /// the multi-grid launcher.
    MultiGrid,
    /// `MultiGridVec<T>`: this grid's replica, the replica table, length, replica count,
    /// barrier word and tag.
    MultiGridVec(Type),
    /// `BlockShape<X, Y, Z>`: not passed; the launcher checks the block shape.
    Shape,
    /// `DisjointMatrix<T, L>`: pointer, rows and columns.
    Matrix(Type),
    /// `Matrix<T, I>` (read-only): pointer, rows and columns.
    MatrixRef(Type),
}

pub struct Param {
    pub attrs: Vec<syn::Attribute>,
    pub ident: Ident,
    pub ty: Type,
    pub kind: ParamKind,
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
        let kind = classify(&pt.ty)?;
        out.push(Param { attrs: pt.attrs.clone(), ident, ty: (*pt.ty).clone(), kind });
    }
    Ok(out)
}

fn classify(ty: &Type) -> syn::Result<ParamKind> {
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
                Type::Slice(s) => Ok(ParamKind::Slice((*s.elem).clone())),
                _ => Err(syn::Error::new_spanned(
                    ty,
                    "a reference to one value cannot be a kernel parameter: pass `T` by value (`T: DeviceCopy`) or a slice `&[T]`",
                )),
            }
        }
        Type::Ptr(p) => Ok(if p.mutability.is_some() {
            ParamKind::MutPtr((*p.elem).clone())
        } else {
            ParamKind::ConstPtr((*p.elem).clone())
        }),
        Type::Path(tp) if tp.qself.is_none() => {
            let last = tp.path.segments.last().expect("a path has a segment");
            let first_type_arg = || match &last.arguments {
                syn::PathArguments::AngleBracketed(ab) => ab.args.iter().find_map(|a| match a {
                    syn::GenericArgument::Type(t) => Some(t.clone()),
                    _ => None,
                }),
                _ => None,
            };
            match last.ident.to_string().as_str() {
                "AppendSlice" => first_type_arg().map(ParamKind::Append).ok_or_else(|| {
                    syn::Error::new_spanned(ty, "`AppendSlice` needs its element type: `AppendSlice<T>`")
                }),
                "GridVec" => first_type_arg()
                    .map(ParamKind::GridVec)
                    .ok_or_else(|| syn::Error::new_spanned(ty, "`GridVec` needs its element type: `GridVec<T>`")),
                "DisjointSlice" => first_type_arg().map(ParamKind::Disjoint).ok_or_else(|| {
                    syn::Error::new_spanned(ty, "`DisjointSlice` needs its element type: `DisjointSlice<T>`")
                }),
                "GridGroup" => Ok(ParamKind::Grid),
                "MultiGridGroup" => Ok(ParamKind::MultiGrid),
                "MultiGridVec" => first_type_arg().map(ParamKind::MultiGridVec).ok_or_else(|| {
                    syn::Error::new_spanned(ty, "`MultiGridVec` needs its element type: `MultiGridVec<T>`")
                }),
                "BlockShape" => Ok(ParamKind::Shape),
                "DisjointMatrix" => first_type_arg().map(ParamKind::Matrix).ok_or_else(|| {
                    syn::Error::new_spanned(ty, "`DisjointMatrix` needs its element type: `DisjointMatrix<T, Layout>`")
                }),
                // `cohort::matrix::Matrix<T, I>`; a `Matrix` without type arguments is taken
                // for a kernel's own by-value type of that name.
                "Matrix" => Ok(first_type_arg().map_or(ParamKind::Scalar, ParamKind::MatrixRef)),
                _ => Ok(ParamKind::Scalar),
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
        _ => Ok(ParamKind::Scalar),
    }
}
