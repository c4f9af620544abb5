//! Phase 7, emit: assembles the items generated for `fn NAME` (the compiled function, `NAME::eager`, `NAME::run`, `NAME::graph`).

/// `quote!` for generated code: every token written in the template gets
/// `Span::mixed_site()`, so a generated local (`v0`, `__ctx`, `__out`) can neither shadow nor
/// be shadowed by a user's name (a host parameter `v0`); interpolated tokens (`#name`, the
/// user's parameters and host expressions) keep their own spans and so their own scope.
macro_rules! mixed_quote {
    ($($tt:tt)*) => {
        ::quote::quote_spanned!(::proc_macro2::Span::mixed_site()=> $($tt)*)
    };
}

/// `format_ident!` for generated names, at `Span::mixed_site()` like [`mixed_quote`] (never
/// the span of a user's identifier it is built from, as `__shape_x` from `x` would be).
macro_rules! mixed_format_ident {
    ($fmt:literal $($rest:tt)*) => {
        ::quote::format_ident!($fmt, span = ::proc_macro2::Span::mixed_site() $($rest)*)
    };
}

pub(crate) use mixed_format_ident as format_ident;
pub(crate) use mixed_quote as quote;

pub mod compiled;
pub mod describe;
pub mod eager;
pub mod flat;

use crate::ir::{DType, Dim, Graph, Monomial, Op, Padding, Param, Shape};
use crate::signature::ResultTree;
use proc_macro2::{Ident, Span, TokenStream};

/// The runtime's `conv::Padding` value for `padding` (convolution and pooling alike).
pub(crate) fn padding_tokens(padding: Padding) -> TokenStream {
    match padding {
        Padding::Same => quote!(::grafo::__private::conv::Padding::Same),
        Padding::Valid => quote!(::grafo::__private::conv::Padding::Valid),
    }
}

/// The Rust type of an element.
pub fn elem_ty(dt: DType) -> TokenStream {
    match dt {
        DType::F32 => quote!(f32),
        DType::F64 => quote!(f64),
        DType::I32 => quote!(i32),
        DType::I64 => quote!(i64),
        DType::Bool => quote!(bool),
    }
}

/// ndarray's dimension type for a rank.
pub fn dim_ty(rank: usize) -> TokenStream {
    match rank {
        0 => quote!(::grafo::ndarray::Ix0),
        1 => quote!(::grafo::ndarray::Ix1),
        2 => quote!(::grafo::ndarray::Ix2),
        3 => quote!(::grafo::ndarray::Ix3),
        4 => quote!(::grafo::ndarray::Ix4),
        5 => quote!(::grafo::ndarray::Ix5),
        6 => quote!(::grafo::ndarray::Ix6),
        _ => quote!(::grafo::ndarray::IxDyn),
    }
}

/// The local holding the size of a symbolic dim.
pub fn sym_ident(s: &str) -> Ident {
    format_ident!("__dim_{}", s)
}

/// One dim as a `usize` expression.
pub fn dim_expr(d: &Dim) -> TokenStream {
    match d {
        Dim::Const(n) => {
            let n = *n as usize;
            quote!(#n)
        }
        Dim::Sym(s) => {
            let id = sym_ident(s);
            quote!(#id)
        }
        Dim::Prod(m) => {
            let id = product_ident(m);
            quote!(#id)
        }
    }
}

/// The local holding the size of a product dim (`B*4`), bound by [`product_dims`]. Each
/// symbol is written with its length first, so that no two products share a name.
pub fn product_ident(m: &Monomial) -> Ident {
    let mut name = String::from("__dimp");
    for s in &m.syms {
        name.push_str(&format!("_{}{}", s.len(), s));
    }
    format_ident!("{}_x{}", name, m.coef)
}

/// Entry code after [`entry_checks`]: binds every product dim (`B*4`) the graphs use, with
/// checked arithmetic, so that a size that overflows `usize` is an error and not a wrong size.
pub fn product_dims<'g>(graphs: impl IntoIterator<Item = &'g Graph>) -> TokenStream {
    let mut seen: Vec<Monomial> = Vec::new();
    for g in graphs {
        for n in &g.nodes {
            for d in &n.shape {
                if let Dim::Prod(m) = d {
                    if !seen.contains(m) {
                        seen.push(m.clone());
                    }
                }
            }
        }
    }
    seen.sort();
    let mut out = TokenStream::new();
    for m in &seen {
        let id = product_ident(m);
        let text = m.to_string();
        let syms = m.syms.iter().map(|s| sym_ident(s));
        let coef = m.coef as usize;
        out.extend(quote!(let #id: usize = ::grafo::__private::compiled::product_dim(#text, &[#(#syms,)* #coef])?;));
    }
    out
}

/// A shape as a `[usize; R]` expression.
pub fn shape_expr(shape: &[Dim]) -> TokenStream {
    let ds = shape.iter().map(dim_expr);
    quote!([#(#ds),*])
}

/// The element count of a shape as a `usize` expression.
pub fn len_expr(shape: &[Dim]) -> TokenStream {
    if shape.is_empty() {
        return quote!(1usize);
    }
    let ds = shape.iter().map(dim_expr);
    quote!((1usize #(* #ds)*))
}

/// The ndarray dimension value of a shape (`Ix2(a, b)`).
pub fn dim_value(shape: &[Dim]) -> TokenStream {
    let ds: Vec<TokenStream> = shape.iter().map(dim_expr).collect();
    match shape.len() {
        0 => quote!(::grafo::ndarray::Ix0()),
        1 => quote!(::grafo::ndarray::Ix1(#(#ds),*)),
        2 => quote!(::grafo::ndarray::Ix2(#(#ds),*)),
        3 => quote!(::grafo::ndarray::Ix3(#(#ds),*)),
        4 => quote!(::grafo::ndarray::Ix4(#(#ds),*)),
        5 => quote!(::grafo::ndarray::Ix5(#(#ds),*)),
        6 => quote!(::grafo::ndarray::Ix6(#(#ds),*)),
        _ => quote!(::grafo::ndarray::IxDyn(&[#(#ds),*])),
    }
}

/// The public parameter list: tensors as `impl TensorArg` (`impl TensorArgMut` when updated
/// in place), host values as declared, a struct parameter as `&Net` in the place of its
/// first leaf (its other leaves are not listed).
pub fn public_params(params: &[Param]) -> Vec<TokenStream> {
    params
        .iter()
        .enumerate()
        .filter(
            |(_, p)| !matches!(p, Param::Tensor(t) if t.field.as_ref().is_some_and(|f| !f.first)),
        )
        .map(|(i, p)| match p {
            Param::Tensor(t) if t.field.is_some() => {
                let f = t.field.as_ref().expect("a struct leaf");
                let (root, ty) = (&f.root, &f.root_ty);
                quote!(#root: &#ty)
            }
            Param::Tensor(t) => {
                let name = &t.name;
                let et = elem_ty(t.dtype);
                let dt = dim_ty(t.shape.len());
                let lt = syn::Lifetime::new(&format!("'__a{i}"), Span::call_site());
                if t.in_place {
                    quote!(#name: impl ::grafo::__private::compiled::TensorArgMut<#lt, #et, #dt>)
                } else {
                    quote!(#name: impl ::grafo::__private::compiled::TensorArg<#lt, #et, #dt>)
                }
            }
            Param::Host(h) => {
                let name = &h.name;
                let ty = &h.ty;
                quote!(#name: #ty)
            }
        })
        .collect()
}

/// The lifetime parameters of the public functions, one per tensor parameter.
pub fn lifetimes(params: &[Param]) -> TokenStream {
    let lts: Vec<syn::Lifetime> = params
        .iter()
        .enumerate()
        .filter(|(_, p)| matches!(p, Param::Tensor(t) if t.field.is_none()))
        .map(|(i, _)| syn::Lifetime::new(&format!("'__a{i}"), Span::call_site()))
        .collect();
    if lts.is_empty() {
        quote!()
    } else {
        quote!(<#(#lts),*>)
    }
}

/// The parameter list of the inner functions: tensors as `ArrayView`s (`ArrayViewMut` when
/// updated in place).
pub fn view_params(params: &[Param]) -> Vec<TokenStream> {
    params
        .iter()
        .map(|p| match p {
            Param::Tensor(t) => {
                let name = &t.name;
                let et = elem_ty(t.dtype);
                let dt = dim_ty(t.shape.len());
                if t.in_place {
                    quote!(mut #name: ::grafo::ndarray::ArrayViewMut<'_, #et, #dt>)
                } else {
                    quote!(#name: ::grafo::ndarray::ArrayView<'_, #et, #dt>)
                }
            }
            Param::Host(h) => {
                let name = &h.name;
                let ty = &h.ty;
                quote!(#name: #ty)
            }
        })
        .collect()
}

/// The statements turning each tensor argument into a view (`TensorArg::arg_view`, or
/// `TensorArgMut::arg_view_mut` for a parameter updated in place).
pub fn arg_views(params: &[Param]) -> Vec<TokenStream> {
    params
        .iter()
        .map(|p| match p {
            // A struct parameter's leaf: a view of its field.
            Param::Tensor(t) if t.field.is_some() => {
                let n = &t.name;
                let f = t.field.as_ref().expect("a struct leaf");
                let (root, access) = (&f.root, &f.access);
                quote!(let #n = #root #access.view();)
            }
            Param::Tensor(t) if t.in_place => {
                let n = &t.name;
                quote!(let mut #n = ::grafo::__private::compiled::TensorArgMut::arg_view_mut(#n);)
            }
            Param::Tensor(t) => {
                let n = &t.name;
                quote!(let #n = ::grafo::__private::compiled::TensorArg::arg_view(#n);)
            }
            Param::Host(_) => quote!(),
        })
        .collect()
}

/// The names of all parameters, for forwarding calls.
pub fn param_names(params: &[Param]) -> Vec<Ident> {
    params
        .iter()
        .map(|p| match p {
            Param::Tensor(t) => t.name.clone(),
            Param::Host(h) => h.name.clone(),
        })
        .collect()
}

/// The result type: `Array<T, IxN>` or a (nested) tuple of them.
pub fn result_type(outputs: &[(DType, Shape)], tree: &ResultTree) -> TokenStream {
    match tree {
        ResultTree::Leaf(i) => {
            let (dt, s) = &outputs[*i];
            let et = elem_ty(*dt);
            let d = dim_ty(s.len());
            quote!(::grafo::ndarray::Array<#et, #d>)
        }
        ResultTree::Tuple(items) => {
            let tys = items.iter().map(|t| result_type(outputs, t));
            quote!((#(#tys,)*))
        }
        ResultTree::Struct { ty, .. } => crate::structs::layers::type_tokens(ty),
        ResultTree::Array(items) => {
            let elem = items.first().map(|t| result_type(outputs, t));
            let n = items.len();
            quote!([#elem; #n])
        }
    }
}

/// The function's result built from the flat tuple `__results` of its outputs, nested as declared.
pub fn result_value(tree: &ResultTree) -> TokenStream {
    match tree {
        ResultTree::Leaf(i) => {
            let i = syn::Index::from(*i);
            quote!(__results.#i)
        }
        ResultTree::Tuple(items) => {
            let vs = items.iter().map(result_value);
            quote!((#(#vs,)*))
        }
        ResultTree::Struct { ty, fields } => {
            let names = fields.iter().map(|(f, _)| f);
            let vs = fields.iter().map(|(_, t)| result_value(t));
            let ty = crate::structs::layers::expr_path_tokens(ty);
            quote!(#ty { #(#names: #vs),* })
        }
        ResultTree::Array(items) => {
            let vs = items.iter().map(result_value);
            quote!([#(#vs),*])
        }
    }
}

/// Entry code: binds symbolic dims from the inputs and checks every static dim and repeated symbol.
pub fn entry_checks(params: &[Param]) -> TokenStream {
    let mut out = TokenStream::new();
    let mut bound: Vec<(String, String, usize)> = Vec::new();
    for p in params {
        let Param::Tensor(t) = p else { continue };
        let name = &t.name;
        let pname = t.label();
        let shape_id = format_ident!("__shape_{}", name);
        out.extend(quote!(let #shape_id: &[usize] = #name.shape();));
        for (axis, d) in t.shape.iter().enumerate() {
            match d {
                Dim::Const(n) => {
                    let n = *n as usize;
                    out.extend(quote!(::grafo::__private::compiled::check_dim(#pname, #axis, #n, #shape_id)?;));
                }
                // Checked (or used to bind their one free symbol) below, once every plain dim is bound.
                Dim::Prod(_) => {}
                Dim::Sym(s) => {
                    let id = sym_ident(s);
                    match bound.iter().find(|(b, _, _)| b == s) {
                        None => {
                            out.extend(quote!(let #id: usize = #shape_id[#axis];));
                            bound.push((s.clone(), pname.clone(), axis));
                        }
                        Some((_, by, _)) => {
                            let by = by.clone();
                            out.extend(quote!(::grafo::__private::compiled::check_symbol(#s, #id, #by, #pname, #axis, #shape_id)?;));
                        }
                    }
                }
            }
        }
    }
    // Product dims (`{B * 4}`): checked against their factors, or binding their one symbol
    // that no plain dim binds (the signature checked there is at most one).
    let mut bound: Vec<String> = bound.into_iter().map(|(s, _, _)| s).collect();
    for p in params {
        let Param::Tensor(t) = p else { continue };
        let pname = t.label();
        let shape_id = format_ident!("__shape_{}", t.name);
        for (axis, d) in t.shape.iter().enumerate() {
            let Dim::Prod(m) = d else { continue };
            let text = m.to_string();
            let coef = m.coef as usize;
            match m.syms.iter().find(|s| !bound.contains(s)).cloned() {
                None => {
                    let syms = m.syms.iter().map(|s| sym_ident(s));
                    out.extend(quote!(::grafo::__private::compiled::check_product_dim(#pname, #axis, #text, &[#(#syms,)* #coef], #shape_id)?;));
                }
                Some(free) => {
                    let id = sym_ident(&free);
                    let known = m.syms.iter().filter(|s| **s != free).map(|s| sym_ident(s));
                    out.extend(quote!(let #id: usize = ::grafo::__private::compiled::bind_from_product(#pname, #axis, #text, #free, &[#(#known,)* #coef], #shape_id)?;));
                    bound.push(free);
                }
            }
        }
    }
    out
}

/// Entry code: every host parameter used as an operand of a narrower dtype than its own
/// (an `i64` or `usize` next to an `i32` tensor, an `f64` next to an `f32` one) is checked
/// to fit it, so the graph never computes with a truncated or infinite copy.
pub fn host_range_checks(graph: &Graph, params: &[Param]) -> TokenStream {
    let mut out = TokenStream::new();
    let mut done: Vec<(usize, DType)> = Vec::new();
    let mut used = vec![false; graph.nodes.len()];
    for n in &graph.nodes {
        for i in &n.inputs {
            used[i.0] = true;
        }
    }
    let cond_values = graph.conds.iter().flat_map(|c| {
        let predicate = match c.predicate {
            crate::ir::Predicate::Tensor(p) => Some(p),
            crate::ir::Predicate::Host(_) => None,
        };
        c.then_outputs
            .iter()
            .chain(&c.else_outputs)
            .copied()
            .chain(predicate)
    });
    let writebacks = graph.writebacks.iter().map(|&(_, w)| w);
    for o in graph
        .outputs
        .iter()
        .copied()
        .chain(writebacks)
        .chain(cond_values)
    {
        used[o.0] = true;
    }
    for (id, n) in graph.nodes.iter().enumerate() {
        // A host node nothing reads is the parameter's reference before it took its
        // partner's dtype; only the dtypes it is computed in matter.
        let Op::Host { expr } = &n.op else { continue };
        if !used[id] {
            continue;
        }
        let Some((i, h)) = params.iter().enumerate().find_map(|(i, p)| match p {
            Param::Host(h) if h.name == expr.as_str() => Some((i, h)),
            _ => None,
        }) else {
            continue;
        };
        if done.contains(&(i, n.dtype)) {
            continue;
        }
        done.push((i, n.dtype));
        let rust_ty = quote::ToTokens::to_token_stream(&h.ty).to_string();
        let name = &h.name;
        let pname = name.to_string();
        let dt = n.dtype.to_string();
        let error = quote! {
            return ::std::result::Result::Err(::grafo::Error::HostValueRange {
                param: ::std::string::ToString::to_string(#pname),
                value: ::std::format!("{:?}", #name),
                dtype: #dt,
            });
        };
        let int_range = |lo: i128, hi: i128| {
            let (lo, hi) = (
                proc_macro2::Literal::i128_unsuffixed(lo),
                proc_macro2::Literal::i128_unsuffixed(hi),
            );
            quote! {
                if !(#lo..=#hi).contains(&(#name as i128)) {
                    #error
                }
            }
        };
        let wide_int = matches!(rust_ty.as_str(), "i64" | "isize" | "usize" | "u64" | "u32");
        let unsigned_64 = matches!(rust_ty.as_str(), "usize" | "u64");
        out.extend(match n.dtype {
            DType::I32 if wide_int => int_range(i32::MIN.into(), i32::MAX.into()),
            DType::I64 if unsigned_64 => int_range(i64::MIN.into(), i64::MAX.into()),
            DType::F32 if rust_ty == "f64" => quote! {
                if #name.is_finite() && !(#name as f32).is_finite() {
                    #error
                }
            },
            _ => continue,
        });
    }
    out
}

/// A generated identifier, hygienic like the names of [`format_ident`].
pub fn ident(s: &str) -> Ident {
    Ident::new(s, Span::mixed_site())
}
