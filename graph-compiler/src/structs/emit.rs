//! The Rust items of a parameter struct: the plain struct of owned ndarray arrays the caller
//! builds, and its `init`, `load_safetensors`, `load_safetensors_with` and `save_safetensors`.
//!
//! The per-field glue is written here; reading, writing and initialising a tensor are the
//! runtime's (`graph_runtime::checkpoint`, `graph_runtime::init`). A tensor's name in a
//! checkpoint is its field path with dots, `blocks.3.attn.wq`; a field's initialiser stream
//! is seeded from the seed and that path.

use super::{FieldTy, Init, StructDefs};
use crate::emit::{dim_ty, elem_ty, format_ident, quote};
use proc_macro2::{Literal, TokenStream};

/// The Rust type of a field: `Array<f32, Ix2>`, a struct, or an array of them.
pub fn rust_type(ty: &FieldTy) -> TokenStream {
    match ty {
        FieldTy::Tensor { dtype, shape } => {
            let (et, dt) = (elem_ty(*dtype), dim_ty(shape.len()));
            quote!(::grafo::ndarray::Array<#et, #dt>)
        }
        FieldTy::Struct(s) => super::layers::type_tokens(s),
        FieldTy::Array(inner, n) => {
            let inner = rust_type(inner);
            quote!([#inner; #n])
        }
    }
}

fn initializer(init: Init) -> TokenStream {
    let f = Literal::f64_suffixed;
    let path = quote!(::grafo::__private::init::Initializer);
    match init {
        Init::Zeros => quote!(#path::Zeros),
        Init::Ones => quote!(#path::Ones),
        Init::Constant(v) => {
            let v = f(v);
            quote!(#path::Constant(#v))
        }
        Init::GlorotUniform => quote!(#path::GlorotUniform),
        Init::GlorotNormal => quote!(#path::GlorotNormal),
        Init::HeNormal => quote!(#path::HeNormal),
        Init::HeUniform => quote!(#path::HeUniform),
        Init::LecunNormal => quote!(#path::LecunNormal),
        Init::LecunUniform => quote!(#path::LecunUniform),
        Init::RandomNormal { mean, stddev } => {
            let (m, s) = (f(mean), f(stddev));
            quote!(#path::RandomNormal { mean: #m, stddev: #s })
        }
        Init::TruncatedNormal { mean, stddev } => {
            let (m, s) = (f(mean), f(stddev));
            quote!(#path::TruncatedNormal { mean: #m, stddev: #s })
        }
        Init::Uniform { lo, hi } => {
            let (lo, hi) = (f(lo), f(hi));
            quote!(#path::Uniform { lo: #lo, hi: #hi })
        }
        Init::Orthogonal { gain } => {
            let gain = f(gain);
            quote!(#path::Orthogonal { gain: #gain })
        }
    }
}

/// What to build a value of a field's type with.
#[derive(Clone, Copy)]
enum Build {
    /// From a checkpoint (`__r`).
    Read,
    /// From the initialisers (`__g`).
    Init,
}

/// An expression building a value of type `ty` whose tensor names start at the `String`
/// expression `path`; `init` is the field's initialiser (for a tensor or an array of them).
fn build(
    ty: &FieldTy,
    path: &TokenStream,
    init: Option<Init>,
    how: Build,
    depth: usize,
) -> TokenStream {
    match ty {
        FieldTy::Tensor { dtype, shape } => {
            let (et, dt) = (elem_ty(*dtype), dim_ty(shape.len()));
            let dims = shape.iter().map(|&n| n as usize);
            match how {
                Build::Read => quote!(__r.take::<#et, #dt>(&#path, &[#(#dims),*])),
                Build::Init => {
                    let init =
                        initializer(init.unwrap_or_else(|| Init::default_for(*dtype, shape.len())));
                    quote!(__g.tensor::<#et, #dt>(&#path, &[#(#dims),*], #init))
                }
            }
        }
        FieldTy::Struct(s) => {
            let s = super::layers::type_tokens(s);
            match how {
                Build::Read => quote!(<#s>::__grafo_read(__r, &::std::format!("{}.", #path))),
                Build::Init => quote!(<#s>::__grafo_init(__g, &::std::format!("{}.", #path))),
            }
        }
        FieldTy::Array(inner, _) => {
            let (i, p) = (format_ident!("__i{}", depth), format_ident!("__p{}", depth));
            let inner = build(inner, &quote!(#p), init, how, depth + 1);
            quote!(::std::array::from_fn(|#i| {
                let #p = ::std::format!("{}.{}", #path, #i);
                #inner
            }))
        }
    }
}

/// Statements adding the tensors of the value `access` (a reference) of type `ty` to `__w`.
fn write(ty: &FieldTy, access: &TokenStream, path: &TokenStream, depth: usize) -> TokenStream {
    match ty {
        FieldTy::Tensor { .. } => quote!(__w.add(#path, #access);),
        FieldTy::Struct(_) => quote!(#access.__grafo_write(__w, &::std::format!("{}.", #path));),
        FieldTy::Array(inner, _) => {
            let (i, e, p) = (
                format_ident!("__i{}", depth),
                format_ident!("__e{}", depth),
                format_ident!("__p{}", depth),
            );
            let inner = write(inner, &quote!(#e), &quote!(#p), depth + 1);
            quote! {
                for (#i, #e) in #access.iter().enumerate() {
                    let #p = ::std::format!("{}.{}", #path, #i);
                    #inner
                }
            }
        }
    }
}

/// `Clone` and `Debug`, which every parameter struct derives, less those its own
/// `#[derive(...)]` already names.
fn missing_derives(attrs: &[syn::Attribute]) -> TokenStream {
    let mut named: Vec<String> = Vec::new();
    for a in attrs.iter().filter(|a| a.path().is_ident("derive")) {
        let _ = a.parse_nested_meta(|meta| {
            if let Some(last) = meta.path.segments.last() {
                named.push(last.ident.to_string());
            }
            Ok(())
        });
    }
    let missing: Vec<TokenStream> = [
        ("Clone", quote!(::std::clone::Clone)),
        ("Debug", quote!(::std::fmt::Debug)),
    ]
    .into_iter()
    .filter(|(n, _)| !named.iter().any(|x| x == n))
    .map(|(_, path)| path)
    .collect();
    if missing.is_empty() {
        TokenStream::new()
    } else {
        quote!(#[derive(#(#missing),*)])
    }
}

/// The items of the parameter struct `name`: the struct and its `impl`.
pub fn item(defs: &StructDefs, name: &str) -> TokenStream {
    let Some(def) = defs.get(name) else {
        return TokenStream::new();
    };
    if !def.ok {
        // Its errors are reported; the struct is left out rather than emitted half-typed.
        return TokenStream::new();
    }
    let s = &def.item;
    let (attrs, vis, ident) = (&s.attrs, &s.vis, &s.ident);
    let fields = def.fields.iter().map(|f| {
        let (fattrs, fvis, fid) = (&f.attrs, &f.vis, &f.ident);
        let ty = rust_type(&f.ty);
        quote!(#(#fattrs)* #fvis #fid: #ty)
    });
    let field_path = |f: &super::FieldDef| {
        let name = f.ident.to_string();
        quote!(::std::format!("{}{}", __prefix, #name))
    };
    let reads = def.fields.iter().map(|f| {
        let fid = &f.ident;
        let v = build(&f.ty, &field_path(f), f.init, Build::Read, 0);
        quote!(#fid: #v)
    });
    let inits = def.fields.iter().map(|f| {
        let fid = &f.ident;
        let v = build(&f.ty, &field_path(f), f.init, Build::Init, 0);
        quote!(#fid: #v)
    });
    let writes = def.fields.iter().map(|f| {
        let fid = &f.ident;
        write(&f.ty, &quote!((&self.#fid)), &field_path(f), 0)
    });
    let name_str = ident.to_string();
    let init_doc = format!("A `{name_str}` with every field drawn by its initialiser (Keras' definitions: `glorot_uniform` for kernels of rank 2 and more unless the field says `#[init(...)]`, `zeros` for the rest), reproducibly: each field's stream is seeded from `seed` and the field's path.");
    let load_doc = format!("Loads a `{name_str}` from a safetensors file whose tensor names are the field paths (`blocks.3.wq`), memory-mapped: each tensor's bytes are read once, into the field's owned array. Every missing, unexpected, misshapen or mistyped tensor is listed in one `Err`.");
    let load_with_doc = format!("As [`{name_str}::load_safetensors`], with the file's names and layouts mapped by `remap` (PyTorch's names, OIHW convolution kernels, `Linear`'s transposed weights).");
    let save_doc = format!("Writes this `{name_str}` as a safetensors file, each tensor named by its field path (`blocks.3.wq`).");
    let allow = quote!(#[allow(clippy::all, clippy::pedantic, dead_code, unused_mut)]);
    let derives = missing_derives(attrs);
    quote! {
        #(#attrs)*
        #derives
        #vis struct #ident {
            #(#fields,)*
        }

        #allow
        impl #ident {
            #[doc = #init_doc]
            pub fn init(seed: u64) -> #ident {
                let mut __g = ::grafo::__private::init::Init::new(seed);
                #ident::__grafo_init(&mut __g, "")
            }

            #[doc(hidden)]
            pub fn __grafo_init(__g: &mut ::grafo::__private::init::Init, __prefix: &str) -> #ident {
                #ident { #(#inits,)* }
            }

            #[doc = #load_doc]
            pub fn load_safetensors(path: impl ::std::convert::AsRef<::std::path::Path>) -> ::std::result::Result<#ident, ::grafo::Error> {
                #ident::load_safetensors_with(path, &::grafo::checkpoint::Remap::new())
            }

            #[doc = #load_with_doc]
            pub fn load_safetensors_with(path: impl ::std::convert::AsRef<::std::path::Path>, remap: &::grafo::checkpoint::Remap) -> ::std::result::Result<#ident, ::grafo::Error> {
                let mut __r = ::grafo::checkpoint::Reader::open(path.as_ref(), #name_str, remap)?;
                let __v = #ident::__grafo_read(&mut __r, "");
                __r.finish()?;
                ::std::result::Result::Ok(__v)
            }

            #[doc(hidden)]
            pub fn __grafo_read(__r: &mut ::grafo::checkpoint::Reader, __prefix: &str) -> #ident {
                #ident { #(#reads,)* }
            }

            #[doc = #save_doc]
            pub fn save_safetensors(&self, path: impl ::std::convert::AsRef<::std::path::Path>) -> ::std::result::Result<(), ::grafo::Error> {
                let mut __w = ::grafo::checkpoint::Writer::new();
                self.__grafo_write(&mut __w, "");
                __w.write(path.as_ref())
            }

            #[doc(hidden)]
            pub fn __grafo_write<'__w>(&'__w self, __w: &mut ::grafo::checkpoint::Writer<'__w>, __prefix: &str) {
                #(#writes)*
            }
        }
    }
}
