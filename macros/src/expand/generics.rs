//! A kernel's instances: its generic parameters replaced by each `instances(...)` entry.

use std::collections::{HashMap, HashSet};

use proc_macro2::{Delimiter, Group, Ident, Punct, Spacing, Span, TokenStream, TokenTree};
use quote::{ToTokens, format_ident, quote};
use syn::GenericParam;

use super::{Instance, Kernel};
use crate::attr::KernelAttr;

/// One [`Instance`] per `instances(...)` entry, or the kernel itself if it is not generic.
pub(super) fn instances(k: &Kernel<'_>, attr: &KernelAttr) -> Vec<Instance> {
    let generics: Vec<&GenericParam> =
        k.item.sig.generics.params.iter().filter(|g| !matches!(g, GenericParam::Lifetime(_))).collect();
    let lifetimes: HashSet<String> = k
        .item
        .sig
        .generics
        .params
        .iter()
        .filter_map(|g| match g {
            GenericParam::Lifetime(l) => Some(l.lifetime.ident.to_string()),
            _ => None,
        })
        .collect();
    let args: Vec<Option<&Vec<TokenStream>>> = match &attr.instances {
        Some((_, insts)) => insts.iter().map(|i| Some(&i.args)).collect(),
        None => vec![None],
    };
    args.into_iter()
        .map(|inst| {
            let mut map = HashMap::new();
            let mut impl_args = Vec::new();
            let mut suffix = Vec::new();
            for (g, a) in generics.iter().zip(inst.into_iter().flatten()) {
                let (ident, is_const) = match g {
                    GenericParam::Type(t) => (t.ident.to_string(), false),
                    GenericParam::Const(c) => (c.ident.to_string(), true),
                    GenericParam::Lifetime(_) => unreachable!(),
                };
                map.insert(ident, a.clone());
                impl_args.push(if is_const { quote!({ #a }) } else { a.clone() });
                suffix.push(sanitize(&a.to_string()));
            }
            let name = &k.item.sig.ident;
            let entry = if suffix.is_empty() { name.clone() } else { format_ident!("{}_{}", name, suffix.join("_")) };
            let call_generics = if impl_args.is_empty() { quote!() } else { quote!(::<#(#impl_args),*>) };
            let tys = k.params.iter().map(|p| substitute(p.ty.to_token_stream(), &map, &lifetimes)).collect();
            Instance { entry, impl_args, call_generics, tys }
        })
        .collect()
}

/// Replaces generic parameter names with an instance's arguments, and the kernel's lifetimes
/// (and `'static`) with `'_`, token by token: the type then stands in the entry, in constants
/// and (as `fn(P)`, `cohort::abi::ParamFn`, whose impls are for `for<'a> fn(P<'a>)`) in the
/// launchers' signatures, where the kernel's lifetimes are not declared.
fn substitute(ts: TokenStream, map: &HashMap<String, TokenStream>, lifetimes: &HashSet<String>) -> TokenStream {
    let mut out = Vec::new();
    let mut tokens = ts.into_iter().peekable();
    while let Some(tt) = tokens.next() {
        match tt {
            TokenTree::Punct(p) if p.as_char() == '\'' && p.spacing() == Spacing::Joint => match tokens.peek() {
                Some(TokenTree::Ident(i)) if i == "static" || lifetimes.contains(&i.to_string()) => {
                    let span = i.span();
                    tokens.next();
                    let mut q = Punct::new('\'', Spacing::Joint);
                    q.set_span(span);
                    out.push(TokenTree::Punct(q));
                    out.push(TokenTree::Ident(Ident::new("_", span)));
                }
                _ => out.push(TokenTree::Punct(p)),
            },
            TokenTree::Ident(i) if map.contains_key(&i.to_string()) => {
                let mut g = Group::new(Delimiter::None, map[&i.to_string()].clone());
                g.set_span(i.span());
                out.push(TokenTree::Group(g));
            }
            TokenTree::Group(g) => {
                let mut ng = Group::new(g.delimiter(), substitute(g.stream(), map, lifetimes));
                ng.set_span(g.span());
                out.push(TokenTree::Group(ng));
            }
            other => out.push(other),
        }
    }
    out.into_iter().collect()
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

/// The call site's span, for identifiers the caller names (`config`).
pub(super) fn call_site() -> Span {
    Span::call_site()
}
