//! `contract`: rewrites `x * y + z` (and `z + x * y`, `x * y - z`, `z - x * y`, `acc += x * y`,
//! `acc -= x * y`) into `cohort::fp`'s fused multiply-add dispatch, which fuses `f32` and `f64`
//! and computes every other type as written. Evaluation order is kept.

use proc_macro2::TokenStream;
use quote::{quote, quote_spanned};
use syn::spanned::Spanned;
use syn::visit_mut::{self, VisitMut};
use syn::{BinOp, Expr, ExprBinary, parse_quote};

struct Contract;

/// `e` without redundant parentheses, if it is a multiplication: its two operands.
fn as_mul(e: &Expr) -> Option<(&Expr, &Expr)> {
    match e {
        Expr::Binary(ExprBinary { left, op: BinOp::Mul(_), right, .. }) => Some((left, right)),
        Expr::Paren(p) => as_mul(&p.expr),
        _ => None,
    }
}

/// `{ let operands; match (&::cohort::fp::KIND(a, b, c)).__fused() { Some(v) => v, None => plain } }`,
/// with the operands bound in evaluation order (`lets`).
fn fused(kind: &str, lets: &[(&str, &Expr)], args: [&str; 3], plain: TokenStream, span: proc_macro2::Span) -> Expr {
    let kind = syn::Ident::new(kind, span);
    let names: Vec<syn::Ident> = lets.iter().map(|(n, _)| syn::Ident::new(n, span)).collect();
    let vals: Vec<&Expr> = lets.iter().map(|(_, e)| *e).collect();
    let args: Vec<syn::Ident> = args.iter().map(|n| syn::Ident::new(n, span)).collect();
    parse_quote!({
        #(let #names = #vals;)*
        #[allow(unused_imports)]
        use ::cohort::fp::{__Fused as _, __Unfused as _};
        match (&::cohort::fp::#kind(#(#args),*)).__fused() {
            ::core::option::Option::Some(__cohort_v) => __cohort_v,
            ::core::option::Option::None => #plain,
        }
    })
}

impl VisitMut for Contract {
    fn visit_expr_mut(&mut self, e: &mut Expr) {
        // Rewrite the operands first (inner expressions), then this one.
        visit_mut::visit_expr_mut(self, e);
        let Expr::Binary(bin) = e else { return };
        let span = bin.span();
        let (x, y, z) = (quote!(__cohort_x), quote!(__cohort_y), quote!(__cohort_z));
        let xyz = ["__cohort_x", "__cohort_y", "__cohort_z"];
        let rewritten: Option<Expr> = match bin.op {
            BinOp::Add(_) => {
                if let Some((a, b)) = as_mul(&bin.left) {
                    let lets = [("__cohort_x", a), ("__cohort_y", b), ("__cohort_z", &*bin.right)];
                    Some(fused("__MulAdd", &lets, xyz, quote!(#x * #y + #z), span))
                } else if let Some((a, b)) = as_mul(&bin.right) {
                    // `z + x * y`: `z` first; addition commutes exactly.
                    let lets = [("__cohort_z", &*bin.left), ("__cohort_x", a), ("__cohort_y", b)];
                    Some(fused("__MulAdd", &lets, xyz, quote!(#z + #x * #y), span))
                } else {
                    None
                }
            }
            BinOp::Sub(_) => {
                if let Some((a, b)) = as_mul(&bin.left) {
                    let lets = [("__cohort_x", a), ("__cohort_y", b), ("__cohort_z", &*bin.right)];
                    Some(fused("__MulSub", &lets, xyz, quote!(#x * #y - #z), span))
                } else if let Some((a, b)) = as_mul(&bin.right) {
                    let lets = [("__cohort_z", &*bin.left), ("__cohort_x", a), ("__cohort_y", b)];
                    Some(fused(
                        "__SubMul",
                        &lets,
                        ["__cohort_z", "__cohort_x", "__cohort_y"],
                        quote!(#z - #x * #y),
                        span,
                    ))
                } else {
                    None
                }
            }
            BinOp::AddAssign(_) | BinOp::SubAssign(_) => {
                if let Some((a, b)) = as_mul(&bin.right) {
                    let acc = &bin.left;
                    let add = matches!(bin.op, BinOp::AddAssign(_));
                    let kind = syn::Ident::new(if add { "__MulAdd" } else { "__SubMul" }, span);
                    let args = if add { quote!(#x, #y, *__cohort_acc) } else { quote!(*__cohort_acc, #x, #y) };
                    let plain = if add { quote!(*__cohort_acc += #x * #y) } else { quote!(*__cohort_acc -= #x * #y) };
                    // Operands first (as compound assignment on primitives evaluates them), then
                    // the place, read and written once; other types keep their `+=` / `-=`.
                    Some(parse_quote!({
                        let #x = #a;
                        let #y = #b;
                        let __cohort_acc = &mut #acc;
                        #[allow(unused_imports)]
                        use ::cohort::fp::{__Fused as _, __Unfused as _};
                        match (&::cohort::fp::#kind(#args)).__fused() {
                            ::core::option::Option::Some(__cohort_v) => *__cohort_acc = __cohort_v,
                            ::core::option::Option::None => #plain,
                        }
                    }))
                } else {
                    None
                }
            }
            _ => None,
        };
        if let Some(r) = rewritten {
            *e = r;
        }
    }

    // Nested items are not part of this function: leave them as written.
    fn visit_item_mut(&mut self, _: &mut syn::Item) {}

    // Macro invocations are opaque token streams, left as written (`printf!`, `assert!`,
    // `stringify!`), except `split!` (`cohort::split!`): its arguments are expressions — views
    // and the body run on them — and the body is kernel code like any other.
    fn visit_macro_mut(&mut self, m: &mut syn::Macro) {
        if m.path.segments.last().is_none_or(|s| s.ident != "split") {
            return;
        }
        let parser = syn::punctuated::Punctuated::<Expr, syn::Token![,]>::parse_terminated;
        let Ok(mut args) = syn::parse::Parser::parse2(parser, m.tokens.clone()) else { return };
        for a in args.iter_mut() {
            self.visit_expr_mut(a);
        }
        m.tokens = quote!(#args);
    }
}

/// Rewrites the body of `f` for contraction.
pub fn rewrite_fn(f: &mut syn::ItemFn) {
    Contract.visit_block_mut(&mut f.block);
}

/// `#[cohort::contract]` on a device function (or `#[kernel(contract)]` through `expand`).
pub fn attribute(attr: TokenStream, item: TokenStream) -> syn::Result<TokenStream> {
    if !attr.is_empty() {
        return Err(syn::Error::new(attr.span(), "`#[contract]` takes no options"));
    }
    let mut f: syn::ItemFn = syn::parse2(item)?;
    rewrite_fn(&mut f);
    let _ = quote_spanned!(f.sig.ident.span()=>);
    Ok(quote!(#f))
}
