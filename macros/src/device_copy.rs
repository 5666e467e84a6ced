//! `#[derive(DeviceCopy)]`.

use proc_macro2::TokenStream;
use quote::{quote, quote_spanned};
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
    let mut sizes = Vec::new();
    for f in fields {
        let ty = &f.ty;
        preds.push(quote!(#ty: ::cohort::DeviceCopy));
        sizes.push(quote!(::core::mem::size_of::<#ty>()));
    }
    // No padding: every byte of the struct is a byte of a field. Shuffles, shared-memory stores
    // and copies move values as whole words, and reading a padding byte is reading
    // uninitialized memory.
    // A generic struct is checked per instantiation (its padding can depend on the type
    // arguments): the error names the instantiation in its note (`<G<u32> as DeviceCopy>`).
    let which = if input.generics.params.is_empty() {
        format!("`{name}`")
    } else {
        format!("`{name}` with these type arguments")
    };
    let msg = format!(
        "{which} has padding bytes (its size is larger than the sum of its fields' sizes): `DeviceCopy` values \
         are moved as whole words, so every byte must belong to a field; add explicit padding fields \
         (e.g. `_pad: [u8; N]`) or reorder the fields"
    );
    // …and no padding inside a field either: each field type's own check (for a generic
    // struct, `W<T> { x: T }` has none of its own but `W<G<u32>>` holds `G<u32>`'s).
    let field_tys: Vec<&syn::Type> = fields.iter().map(|f| &f.ty).collect();
    let check = quote_spanned! {name.span()=>
        {
            ::core::assert!(::core::mem::size_of::<Self>() == 0 #(+ #sizes)*, #msg);
            ::cohort::__fields_have_no_padding(&[#(<#field_tys as ::cohort::DeviceCopy>::__NO_PADDING),*])
        }
    };
    let eager = if input.generics.params.is_empty() {
        // Non-generic: refuse the definition itself.
        quote!(const _: () = <#name as ::cohort::DeviceCopy>::__NO_PADDING;)
    } else {
        quote!()
    };
    Ok(quote! {
        // SAFETY: `#[repr(C)]`/`#[repr(transparent)]` was checked above, every field is
        // required to be `DeviceCopy`, and `__NO_PADDING` (evaluated by
        // `cohort::assert_no_padding` wherever Cohort moves, copies or reinterprets the bytes
        // of a value: for a generic struct, per instantiation) proves there is no padding, so
        // the layout is the same on host and device and every byte is initialized.
        unsafe impl #impl_g ::cohort::DeviceCopy for #name #ty_g where #(#preds),* {
            #[doc(hidden)]
            const __NO_PADDING: () = #check;
        }
        #eager
    })
}
