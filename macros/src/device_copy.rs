//! `#[derive(DeviceCopy)]`.

use proc_macro2::TokenStream;
use quote::quote;
use syn::{Data, DeriveInput};

pub fn derive(item: TokenStream) -> syn::Result<TokenStream> {
    let input: DeriveInput = syn::parse2(item)?;
    let name = &input.ident;
    let mut repr_ok = false;
    for attr in input.attrs.iter().filter(|a| a.path().is_ident("repr")) {
        attr.parse_nested_meta(|meta| {
            if meta.path.is_ident("C") || meta.path.is_ident("transparent") {
                repr_ok = true;
            }
            // Skip the arguments of `align(N)` / `packed(N)`.
            if meta.input.peek(syn::token::Paren) {
                let content;
                syn::parenthesized!(content in meta.input);
                let _: proc_macro2::TokenStream = content.parse()?;
            }
            Ok(())
        })?;
    }
    let fields = match &input.data {
        Data::Struct(s) => &s.fields,
        Data::Enum(e) => {
            return Err(syn::Error::new_spanned(
                e.enum_token,
                "`DeviceCopy` is derived for structs only: a device could write an invalid enum discriminant",
            ));
        }
        Data::Union(u) => {
            return Err(syn::Error::new_spanned(u.union_token, "`DeviceCopy` is derived for structs only"));
        }
    };
    if !repr_ok {
        return Err(syn::Error::new_spanned(
            name,
            "`DeviceCopy` needs `#[repr(C)]` (or `#[repr(transparent)]`): Rust's default layout may differ between host and device",
        ));
    }
    let (impl_g, ty_g, where_g) = input.generics.split_for_impl();
    let mut preds: Vec<TokenStream> =
        where_g.map(|w| w.predicates.iter().map(|p| quote!(#p)).collect()).unwrap_or_default();
    for f in fields {
        let ty = &f.ty;
        preds.push(quote!(#ty: ::cohort::DeviceCopy));
    }
    Ok(quote! {
        // SAFETY: `#[repr(C)]`/`#[repr(transparent)]` was checked above and every field is
        // required to be `DeviceCopy`, so the layout is the same on host and device.
        unsafe impl #impl_g ::cohort::DeviceCopy for #name #ty_g where #(#preds),* {}
    })
}
