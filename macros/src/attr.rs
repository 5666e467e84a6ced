//! Options of `#[kernel(...)]`.

use proc_macro2::TokenStream;
use syn::parse::{Parse, ParseStream};
use syn::punctuated::Punctuated;
use syn::{Ident, Token, parenthesized};

/// One generic instance: a type or a constant per generic parameter.
pub struct Instance {
    pub args: Vec<TokenStream>,
    pub span_tokens: TokenStream,
}

#[derive(Default)]
pub struct KernelAttr {
    pub cooperative: Option<Ident>,
    pub multi_grid: Option<Ident>,
    pub contract: Option<Ident>,
    pub dependent: Option<Ident>,
    pub cluster: Option<Ident>,
    pub instances: Option<(Ident, Vec<Instance>)>,
    /// `launch_bounds(max_threads)` or `launch_bounds(max_threads, min_blocks_per_sm)`.
    pub launch_bounds: Option<(Ident, syn::LitInt, Option<syn::LitInt>)>,
    /// `max_registers(n)`.
    pub max_registers: Option<(Ident, syn::LitInt)>,
}

impl Parse for KernelAttr {
    fn parse(input: ParseStream<'_>) -> syn::Result<Self> {
        let mut attr = KernelAttr::default();
        while !input.is_empty() {
            let key: Ident = input.parse()?;
            match key.to_string().as_str() {
                "cooperative" => {
                    if attr.cooperative.is_some() {
                        return Err(syn::Error::new_spanned(&key, "`cooperative` given twice"));
                    }
                    attr.cooperative = Some(key);
                }
                "multi_grid" => {
                    if attr.multi_grid.is_some() {
                        return Err(syn::Error::new_spanned(&key, "`multi_grid` given twice"));
                    }
                    attr.multi_grid = Some(key);
                }
                "contract" => {
                    if attr.contract.is_some() {
                        return Err(syn::Error::new_spanned(&key, "`contract` given twice"));
                    }
                    attr.contract = Some(key);
                }
                "dependent" => {
                    if attr.dependent.is_some() {
                        return Err(syn::Error::new_spanned(&key, "`dependent` given twice"));
                    }
                    attr.dependent = Some(key);
                }
                "cluster" => {
                    if attr.cluster.is_some() {
                        return Err(syn::Error::new_spanned(&key, "`cluster` given twice"));
                    }
                    attr.cluster = Some(key);
                }
                "instances" => {
                    if attr.instances.is_some() {
                        return Err(syn::Error::new_spanned(&key, "`instances` given twice"));
                    }
                    let content;
                    parenthesized!(content in input);
                    let list: Punctuated<Instance, Token![,]> = content.parse_terminated(Instance::parse, Token![,])?;
                    let insts: Vec<Instance> = list.into_iter().collect();
                    if insts.is_empty() {
                        return Err(syn::Error::new_spanned(&key, "`instances(...)` needs at least one instance"));
                    }
                    attr.instances = Some((key, insts));
                }
                "launch_bounds" => {
                    if attr.launch_bounds.is_some() {
                        return Err(syn::Error::new_spanned(&key, "`launch_bounds` given twice"));
                    }
                    let content;
                    parenthesized!(content in input);
                    let list: Punctuated<syn::LitInt, Token![,]> =
                        content.parse_terminated(|i| i.parse::<syn::LitInt>(), Token![,])?;
                    let mut it = list.into_iter();
                    let (Some(threads), blocks, None) = (it.next(), it.next(), it.next()) else {
                        return Err(syn::Error::new_spanned(
                            &key,
                            "`launch_bounds` takes one or two integers: `launch_bounds(max_threads_per_block)` or \
                             `launch_bounds(max_threads_per_block, min_blocks_per_sm)`",
                        ));
                    };
                    attr.launch_bounds = Some((key, threads, blocks));
                }
                "max_registers" => {
                    if attr.max_registers.is_some() {
                        return Err(syn::Error::new_spanned(&key, "`max_registers` given twice"));
                    }
                    let content;
                    parenthesized!(content in input);
                    let n: syn::LitInt = content.parse()?;
                    if !content.is_empty() {
                        return Err(content.error("`max_registers` takes one integer: `max_registers(64)`"));
                    }
                    attr.max_registers = Some((key, n));
                }
                other => {
                    return Err(syn::Error::new_spanned(
                        &key,
                        format!(
                            "unknown `#[kernel]` option `{other}`; expected `cooperative`, `multi_grid`, `cluster`, `contract`, `dependent`, `launch_bounds(...)`, `max_registers(...)` or `instances(...)`"
                        ),
                    ));
                }
            }
            if !input.is_empty() {
                input.parse::<Token![,]>()?;
            }
        }
        Ok(attr)
    }
}

/// An instance is a type (`f32`), a constant (`4`, `{ N }`) or a parenthesized list of those
/// for several generic parameters (`(f32, 4)`).
impl Parse for Instance {
    fn parse(input: ParseStream<'_>) -> syn::Result<Self> {
        use quote::ToTokens;
        if input.peek(syn::token::Paren) {
            let fork = input.fork();
            let content;
            parenthesized!(content in fork);
            let list: Punctuated<syn::GenericArgument, Token![,]> =
                content.parse_terminated(syn::GenericArgument::parse, Token![,])?;
            let group: proc_macro2::TokenTree = input.parse()?;
            return Ok(Instance {
                args: list.iter().map(|a| a.to_token_stream()).collect(),
                span_tokens: group.into_token_stream(),
            });
        }
        let arg: syn::GenericArgument = input.parse()?;
        let t = arg.to_token_stream();
        Ok(Instance { args: vec![t.clone()], span_tokens: t })
    }
}
