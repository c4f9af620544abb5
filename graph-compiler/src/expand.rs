//! The pipeline of `#[graph]`, top to bottom: parse → lower → infer (during lowering) → optimise → fuse → schedule → emit.

use crate::diag::Diagnostics;
use crate::emit::{self, public_params, result_type, view_params};
use crate::emit::{format_ident, quote};
use crate::ir::{type_str, Param};
use crate::passes::PassConfig;
use crate::signature::{parse_signature_in, Signature};
use crate::structs::StructDefs;
use crate::{fuse, lower, passes, schedule};
use proc_macro2::TokenStream;

/// The largest value (in elements) of a graph that `run` keeps on the caller's thread.
const SMALL_GRAPH_ELEMENTS: u64 = 4096;

/// The stack the expansion runs on: parsing, lowering, the passes and emission recurse
/// once per level of expression nesting (syn's parser too), so a 10,000-deep
/// `neg(abs(neg(..)))` needs far more than a compiler thread's 8 MiB. The stack is mapped
/// lazily: only the depth a program reaches is touched.
const EXPANSION_STACK: usize = 1 << 30;

/// Expands `#[graph(attr)] item`: a `fn` into the compiled function and its
/// `NAME::{eager, run, graph}` module; a `mod` into the same for every `fn` inside, each
/// able to call the others (the call is inlined).
///
/// Runs on a stack of its own (`stacker`, as rustc does for its own recursion): on the same
/// thread, so the proc-macro API stays usable, but deep enough for any nesting rustc parses.
pub fn expand(attr: TokenStream, item: TokenStream) -> TokenStream {
    stacker::grow(EXPANSION_STACK, move || expand_on_this_stack(attr, item))
}

fn expand_on_this_stack(attr: TokenStream, item: TokenStream) -> TokenStream {
    match syn::parse2::<syn::Item>(unwrap_invisible_groups(item)) {
        Ok(syn::Item::Fn(func)) => expand_fn(attr, func, &lower::Callees::default()),
        Ok(syn::Item::Mod(module)) => expand_mod(attr, module),
        Ok(other) => syn::Error::new_spanned(
            other,
            "`#[graph]` goes on a function over tensors (`#[graph] fn f(x: Tensor<f32, B>) -> ...`) or on an inline module of such functions (`#[graph] mod layers { ... }`)",
        )
        .to_compile_error(),
        Err(e) => e.to_compile_error(),
    }
}

/// `#[graph] mod NAME { ... }`: every `fn` of the module becomes a graph function; a call
/// of one from another is inlined with the callee's symbols bound from the arguments. The
/// module's `const` items with literal values are visible in every function's body (as if
/// declared there); its other items (`use`, plain items) are kept as they are, and so are
/// the `const`s themselves.
fn expand_mod(attr: TokenStream, module: syn::ItemMod) -> TokenStream {
    let Some((_, items)) = &module.content else {
        return syn::Error::new_spanned(
            &module,
            "`#[graph] mod` needs the module's functions inline: `#[graph] mod layers { fn ... }`",
        )
        .to_compile_error();
    };
    let consts: std::collections::HashMap<String, crate::ir::Scalar> = items
        .iter()
        .filter_map(|item| match item {
            syn::Item::Const(c) => Some((c.ident.to_string(), lower::const_literal(c)?)),
            _ => None,
        })
        .collect();
    // The parameter structs, read before the functions whose signatures name them.
    let mut struct_diag = Diagnostics::default();
    let structs = StructDefs::parse(items, &consts, &mut struct_diag);
    let fns: Vec<(String, lower::Callee)> = items
        .iter()
        .filter_map(|item| match item {
            syn::Item::Fn(f) => {
                let mut scratch = Diagnostics::default();
                let sig = parse_signature_in(&f.sig, &structs, &mut scratch);
                let callee = lower::Callee::new(
                    sig,
                    !scratch.has_errors(),
                    (*f.block).clone(),
                    f.sig.ident.span(),
                );
                Some((f.sig.ident.to_string(), callee))
            }
            _ => None,
        })
        .collect();
    let callees = lower::Callees::new(fns)
        .with_consts(consts)
        .with_structs(structs);
    let struct_errors = struct_diag
        .into_error()
        .map(|e| e.to_compile_error())
        .unwrap_or_default();
    let expanded = items.iter().map(|item| match item {
        syn::Item::Fn(f) => expand_fn(attr.clone(), f.clone(), &callees),
        // A parameter struct becomes a plain struct of owned arrays, with `init`,
        // `load_safetensors` and `save_safetensors`.
        syn::Item::Struct(s) if callees.structs().get(&s.ident.to_string()).is_some() => {
            crate::structs::emit::item(callees.structs(), &s.ident.to_string())
        }
        // The graphs read a literal `const` by value, so rustc would call it unused.
        syn::Item::Const(c) if callees.consts().contains_key(&c.ident.to_string()) => {
            quote!(#[allow(dead_code)] #c)
        }
        other => quote!(#other),
    });
    let (attrs, vis, ident) = (&module.attrs, &module.vis, &module.ident);
    quote! {
        #(#attrs)*
        #vis mod #ident {
            #struct_errors
            #(#expanded)*
        }
    }
}

/// Expands one graph function; `callees` are the other functions of its `#[graph] mod`.
fn expand_fn(attr: TokenStream, func: syn::ItemFn, callees: &lower::Callees) -> TokenStream {
    let mut diag = Diagnostics::default();
    let config = parse_config(attr, &mut diag);
    let sig = parse_signature_in(&func.sig, callees.structs(), &mut diag);
    let signature_ok = !diag.has_errors();
    if !signature_ok {
        return fallback(&func, &sig, diag, signature_ok);
    }
    let lowered = lower::lower(
        &sig,
        &func.block,
        func.sig.ident.span().into(),
        &mut diag,
        callees,
    );
    if diag.has_errors() {
        return fallback(&func, &sig, diag, true);
    }
    let eager_graph = lowered.graph.clone();
    let mut graph = lowered.graph;
    passes::optimise(&mut graph, &config, &mut diag);
    if diag.has_errors() {
        return fallback(&func, &sig, diag, true);
    }
    let plan = fuse::fuse(&graph, &config);
    let sched = schedule::schedule(&graph, &plan);

    let name = &func.sig.ident;
    let mod_keyword = module_keyword(name);
    let name_str = name.to_string();
    let vis = &func.vis;
    let attrs = &func.attrs;
    let pub_params = public_params(&sig.params);
    let lts = emit::lifetimes(&sig.params);
    let v_params = view_params(&sig.params);
    let names = emit::param_names(&sig.params);
    let ret = signature_result_type(&sig);
    let to_views = emit::arg_views(&sig.params);
    let mut checks = emit::entry_checks(&sig.params);
    checks.extend(emit::product_dims([&graph, &eager_graph]));
    checks.extend(emit::host_range_checks(&eager_graph, &sig.params));
    // A graph whose every value is small and static runs on the caller's thread in a
    // Session: handing it to the pool would cost more than the work (W5: scalars).
    let small = graph
        .nodes
        .iter()
        .enumerate()
        .filter(|(i, _)| plan.live[*i])
        .all(|(_, n)| {
            n.shape
                .iter()
                .try_fold(1u64, |acc, d| match d {
                    crate::ir::Dim::Const(k) => Some(acc.saturating_mul(*k)),
                    crate::ir::Dim::Sym(_) | crate::ir::Dim::Prod(_) => None,
                })
                .is_some_and(|elems| elems <= SMALL_GRAPH_ELEMENTS)
        });
    let run_fn = if small {
        format_ident!("__run_here")
    } else {
        format_ident!("__run")
    };
    let mut emitter = emit::compiled::Emitter::new(&graph, &plan, &sched);
    let (kernels, compiled_body) = emit::compiled::share_kernels(emitter.body(&sig.params));
    let eager_body = emit::eager::body(&eager_graph, &sig.params);
    // Recompute only acts on a graph with a backward pass: only such a graph lists it.
    let has_backward = graph
        .nodes
        .iter()
        .any(|n| n.role == crate::ir::Role::Backward);
    let passes: Vec<&str> = config
        .names()
        .into_iter()
        .filter(|&p| p != "recompute" || has_backward)
        .collect();
    let describe = emit::describe::body(&name_str, &graph, &sig.params, &plan, &sched, &passes);
    let result = emit::result_value(&sig.results);
    let doc = doc_text(&name_str, &sig);
    let allow = quote!(#[allow(clippy::all, clippy::pedantic, unused_variables, unused_mut, unused_parens, unused_braces, non_snake_case, unreachable_code, unused_assignments)]);
    let struct_scope = struct_scope(&sig);
    let mod_doc = format!(
        "The items generated by `#[graph]` for [`{name_str}`]: `eager`, `run` and `graph`."
    );
    let expanded = quote! {
        #(#attrs)*
        #[doc = #doc]
        #allow
        #vis fn #name #lts (#(#pub_params),*) -> ::std::result::Result<#ret, ::grafo::Error> {
            #(#to_views)*
            // The buffers of the plan stay with this thread for its next call (a `Session`
            // gives the same reuse with an explicit owner); a re-entrant call gets fresh ones.
            #name::__GRAFO_PLAIN_CALL_ARENA.with(|__cell| match __cell.try_borrow_mut() {
                ::std::result::Result::Ok(mut __arena) => {
                    let mut __ctx = ::grafo::__private::exec::ExecCtx::new(#name::__GRAFO_GRAPH_KEY, &mut __arena, ::std::option::Option::None);
                    #name::__compiled(&mut __ctx, #(#names),*)
                }
                ::std::result::Result::Err(_) => {
                    let mut __arena = ::grafo::__private::exec::Arena::new();
                    let mut __ctx = ::grafo::__private::exec::ExecCtx::new(#name::__GRAFO_GRAPH_KEY, &mut __arena, ::std::option::Option::None);
                    #name::__compiled(&mut __ctx, #(#names),*)
                }
            })
        }

        #[doc = #mod_doc]
        #allow
        #vis #mod_keyword #name {
            #struct_scope
            /// The key of this graph's buffers in a `Session`.
            pub const __GRAFO_GRAPH_KEY: &str = ::std::concat!(::std::module_path!(), "::", #name_str);

            ::std::thread_local! {
                /// The buffer plan's buffers of plain calls on this thread, kept for the next call.
                #[doc(hidden)]
                pub static __GRAFO_PLAIN_CALL_ARENA: ::std::cell::RefCell<::grafo::__private::exec::Arena> =
                    const { ::std::cell::RefCell::new(::grafo::__private::exec::Arena::new()) };
            }

            #[doc(hidden)]
            #allow
            pub fn __compiled(__ctx: &mut ::grafo::__private::exec::ExecCtx<'_>, #(#v_params),*) -> ::std::result::Result<#ret, ::grafo::Error> {
                #checks
                #compiled_body
                #kernels
                ::std::result::Result::Ok(#result)
            }

            #[doc = "The same computation run op by op through `grafo::eager` (the baseline of the benchmarks)."]
            #allow
            pub fn eager #lts (#(#pub_params),*) -> ::std::result::Result<#ret, ::grafo::Error> {
                #(#to_views)*
                #checks
                #eager_body
                ::std::result::Result::Ok(#result)
            }

            #[doc = "The compiled computation inside a `grafo::Session`: its threads, its reused buffers, its profiler."]
            #allow
            pub fn run #lts (__session: &mut ::grafo::Session, #(#pub_params),*) -> ::std::result::Result<#ret, ::grafo::Error> {
                #(#to_views)*
                __session.#run_fn(__GRAFO_GRAPH_KEY, move |__ctx| __compiled(__ctx, #(#names),*))
            }

            #[doc = "The compiled graph as data: nodes, cond subgraphs, fusion groups, schedule and buffer plan."]
            #allow
            pub fn graph() -> ::grafo::GraphDef {
                #describe
            }
        }
    };
    emit::flat::flatten_scopes(expanded)
}

/// The function with every invisible group (`Delimiter::None`, what a `macro_rules!`
/// fragment such as `$s:literal` or `$n:expr` arrives wrapped in) of one token tree, or of a
/// `-` and a literal, replaced by its contents, so `conv2d(x, k, $s, "SAME")` and
/// `Tensor<f32, $n>` read the literal as if written in place. Unwrapping one token (or a
/// negated literal) cannot change how the expression around it parses; longer groups stay
/// and are read as parenthesised expressions.
fn unwrap_invisible_groups(tokens: TokenStream) -> TokenStream {
    use proc_macro2::{Delimiter, Group, TokenTree};
    let mut out = TokenStream::new();
    for tt in tokens {
        match tt {
            TokenTree::Group(g) => {
                let inner = unwrap_invisible_groups(g.stream());
                let trees: Vec<TokenTree> = inner.clone().into_iter().collect();
                let plain = match trees.as_slice() {
                    [_] => true,
                    [TokenTree::Punct(p), TokenTree::Literal(_)] => p.as_char() == '-',
                    _ => false,
                };
                if g.delimiter() == Delimiter::None && plain {
                    out.extend(inner);
                } else {
                    let mut rebuilt = Group::new(g.delimiter(), inner);
                    rebuilt.set_span(g.span());
                    out.extend([TokenTree::Group(rebuilt)]);
                }
            }
            other => out.extend([other]),
        }
    }
    out
}

/// The `mod` keyword of the generated module, at the function's name: a `#[graph]` fn in an
/// `impl` block (where no module can live) gets rustc's "module is not supported in `impl`s"
/// at the fn itself.
fn module_keyword(name: &syn::Ident) -> TokenStream {
    quote::quote_spanned!(name.span()=> mod)
}

fn doc_text(name: &str, sig: &Signature) -> String {
    let mut s = format!("Compiled graph `{name}` (generated by `#[graph]`).\n\n# Parameters\n");
    for p in &sig.params {
        match p {
            Param::Tensor(t) => s.push_str(&format!(
                "- `{}`: `{}`{}\n",
                t.label(),
                type_str(t.dtype, &t.shape),
                if t.in_place {
                    " (updated in place: pass `&mut array`; an `Err` leaves it untouched)"
                } else {
                    ""
                }
            )),
            Param::Host(h) => s.push_str(&format!("- `{}`: host value\n", h.name)),
        }
    }
    s.push_str("\n# Returns\n");
    for o in &sig.outputs {
        s.push_str(&format!("- `{}`\n", type_str(o.dtype, &o.shape)));
    }
    s.push_str(&format!(
        "\nErrors with `grafo::Error` when an input's shape does not match. See also `{name}::eager`, `{name}::run`, `{name}::graph`."
    ));
    s
}

/// Reads `#[graph]` or `#[graph(disable(fold, cse, dce, simplify, fusion, recompute))]`.
fn parse_config(attr: TokenStream, diag: &mut Diagnostics) -> PassConfig {
    let mut config = PassConfig::default();
    if attr.is_empty() {
        return config;
    }
    let parser = syn::meta::parser(|meta| {
        if meta.path.is_ident("disable") {
            let content;
            syn::parenthesized!(content in meta.input);
            let names =
                syn::punctuated::Punctuated::<syn::Ident, syn::Token![,]>::parse_terminated(
                    &content,
                )?;
            for name in names {
                match name.to_string().as_str() {
                    "fold" => config.fold = false,
                    "cse" => config.cse = false,
                    "dce" => config.dce = false,
                    "simplify" => config.simplify = false,
                    "fusion" => config.fusion = false,
                    "recompute" => config.recompute = false,
                    _ => {
                        return Err(syn::Error::new(
                            name.span(),
                            "unknown pass: the passes are `fold`, `simplify`, `cse`, `dce`, `recompute` and `fusion`",
                        ))
                    }
                }
            }
            Ok(())
        } else {
            Err(meta.error(
                "unknown `#[graph]` option: the only option is `disable(...)` with pass names",
            ))
        }
    });
    if let Err(e) = syn::parse::Parser::parse2(parser, attr) {
        diag.push(e);
    }
    config
}

/// In the module generated next to a function whose signature names a parameter struct
/// (`p: Net`, `-> Net`): the structs of the `#[graph] mod`, seen from inside.
fn struct_scope(sig: &Signature) -> TokenStream {
    let names_struct = |t: &crate::signature::ResultTree| {
        fn walk(t: &crate::signature::ResultTree) -> bool {
            use crate::signature::ResultTree as R;
            match t {
                R::Leaf(_) => false,
                R::Tuple(items) => items.iter().any(walk),
                R::Struct { .. } | R::Array(_) => true,
            }
        }
        walk(t)
    };
    if sig.struct_params.is_empty() && !names_struct(&sig.results) {
        return TokenStream::new();
    }
    quote::quote!(
        #[allow(unused_imports)]
        use super::*;
    )
}

/// The `Ok` type of the generated functions: the declared outputs, a tuple if declared so.
fn signature_result_type(sig: &Signature) -> TokenStream {
    let outs: Vec<_> = sig
        .outputs
        .iter()
        .map(|o| (o.dtype, o.shape.clone()))
        .collect();
    result_type(&outs, &sig.results)
}

/// The errors, plus the function with its signature and an `unreachable!()` body, so callers get no second error.
fn fallback(
    func: &syn::ItemFn,
    sig: &Signature,
    diag: Diagnostics,
    signature_ok: bool,
) -> TokenStream {
    let err = diag
        .into_error()
        .map(|e| e.to_compile_error())
        .unwrap_or_default();
    if !signature_ok || sig.outputs.is_empty() {
        return err;
    }
    let name = &func.sig.ident;
    let mod_keyword = module_keyword(name);
    let vis = &func.vis;
    let pub_params = public_params(&sig.params);
    let lts = emit::lifetimes(&sig.params);
    let ret = signature_result_type(sig);
    let allow = quote!(#[allow(unused_variables, clippy::all)]);
    let struct_scope = struct_scope(sig);
    quote! {
        #err
        #allow
        #vis fn #name #lts (#(#pub_params),*) -> ::std::result::Result<#ret, ::grafo::Error> {
            ::std::unreachable!("`#[graph]` reported a compile error")
        }
        #allow
        #vis #mod_keyword #name {
            #struct_scope
            pub fn eager #lts (#(#pub_params),*) -> ::std::result::Result<#ret, ::grafo::Error> {
                ::std::unreachable!("`#[graph]` reported a compile error")
            }
            pub fn run #lts (__session: &mut ::grafo::Session, #(#pub_params),*) -> ::std::result::Result<#ret, ::grafo::Error> {
                ::std::unreachable!("`#[graph]` reported a compile error")
            }
            pub fn graph() -> ::grafo::GraphDef {
                ::std::unreachable!("`#[graph]` reported a compile error")
            }
        }
    }
}
