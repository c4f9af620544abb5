//! Phase 1, parse: reads the `#[graph]` function's signature into typed parameters and declared outputs.

use crate::diag::Diagnostics;
use crate::ir::{DType, Dim, FieldOf, HostParam, OutputDecl, Param, Shape, TensorParam};
use crate::structs::{FieldTy, Seg, StructDefs};
use syn::spanned::Spanned;
use syn::{FnArg, GenericArgument, Pat, PathArguments, ReturnType, Type};

/// The parsed signature.
pub struct Signature {
    pub params: Vec<Param>,
    /// The declared result tensors, flattened in order.
    pub outputs: Vec<OutputDecl>,
    /// How the results nest (`-> (Tensor<..>, (Tensor<..>, Tensor<..>))`); its leaves index `outputs`.
    pub results: ResultTree,
    /// The struct parameters (`p: Net`), each passed as its leaf tensors in `params`.
    pub struct_params: Vec<StructParam>,
}

/// A parameter of a parameter struct's type (`p: Net`, `blocks: [Block; 2]`): `params` holds
/// one tensor parameter per leaf (a [`FieldOf`] says where each sits); `tree` nests them as the
/// struct does, its leaves indexing `params`.
#[derive(Debug, Clone)]
pub struct StructParam {
    pub name: syn::Ident,
    pub tree: ResultTree,
    pub mutable: bool,
}

/// The nesting of a function's results: one tensor, or a tuple of results.
#[derive(Debug, Clone)]
pub enum ResultTree {
    /// The tensor `outputs[i]`.
    Leaf(usize),
    Tuple(Vec<ResultTree>),
    /// A parameter struct of the module (`-> Net`): its fields by name.
    Struct {
        ty: syn::Ident,
        fields: Vec<(syn::Ident, ResultTree)>,
    },
    /// A fixed-size array (a field `[Block; 2]`), element by element.
    Array(Vec<ResultTree>),
}

/// The tree of a struct-typed value whose leaves are numbered from `*next` on, calling
/// `leaf(dtype, shape)` for each in order.
pub fn struct_tree(
    structs: &StructDefs,
    ty: &FieldTy,
    next: &mut usize,
    leaf: &mut dyn FnMut(DType, &[u64]),
) -> ResultTree {
    match ty {
        FieldTy::Tensor { dtype, shape } => {
            leaf(*dtype, shape);
            *next += 1;
            ResultTree::Leaf(*next - 1)
        }
        FieldTy::Struct(s) => {
            let fields = structs
                .get(&s.to_string())
                .map(|d| {
                    d.fields
                        .iter()
                        .map(|f| (f.ident.clone(), struct_tree(structs, &f.ty, next, leaf)))
                        .collect()
                })
                .unwrap_or_default();
            ResultTree::Struct {
                ty: s.clone(),
                fields,
            }
        }
        FieldTy::Array(inner, n) => ResultTree::Array(
            (0..*n)
                .map(|_| struct_tree(structs, inner, next, leaf))
                .collect(),
        ),
    }
}

/// Reads a result type (a tensor, or a tuple of results) into `outputs` and its tree.
fn parse_result(
    ty: &Type,
    outputs: &mut Vec<OutputDecl>,
    diag: &mut Diagnostics,
    what: &str,
    structs: &StructDefs,
) -> Option<ResultTree> {
    if let Some(e) = structs.layer_type_error(ty) {
        diag.push(e);
        return None;
    }
    if let Some(sty) = structs.param_type(ty) {
        if !structs.type_ok(&sty) {
            diag.fail_quietly();
            return None;
        }
        let mut next = outputs.len();
        return Some(struct_tree(
            structs,
            &sty,
            &mut next,
            &mut |dtype, shape| {
                outputs.push(OutputDecl {
                    dtype,
                    shape: shape.iter().map(|&n| Dim::Const(n)).collect(),
                })
            },
        ));
    }
    match ty {
        Type::Paren(p) => parse_result(&p.elem, outputs, diag, what, structs),
        Type::Group(g) => parse_result(&g.elem, outputs, diag, what, structs),
        Type::Tuple(t) => {
            if t.elems.is_empty() {
                diag.error(
                    t.span(),
                    "a `#[graph]` function must return at least one tensor, not `()`",
                );
                return None;
            }
            let mut items = Vec::new();
            let mut ok = true;
            for e in &t.elems {
                match parse_result(e, outputs, diag, "a result", structs) {
                    Some(item) => items.push(item),
                    None => ok = false,
                }
            }
            ok.then_some(ResultTree::Tuple(items))
        }
        other => {
            let (dtype, shape) = parse_tensor_type(other, diag, what)?;
            outputs.push(OutputDecl { dtype, shape });
            Some(ResultTree::Leaf(outputs.len() - 1))
        }
    }
}

const DTYPES: &str = "`f32`, `f64`, `i32`, `i64` or `bool`";

/// The prefix of the names the generated code defines as items (kernels, the module's
/// constants). Generated locals are hygienic and never meet a user's name, but an item in a
/// block is visible to the user's tokens in it, so parameters may not start with this (in
/// any case: the module's constants are `__GRAFO_...`).
pub const RESERVED_PREFIX: &str = "__grafo";

/// Reads the parameters and the return type; problems go to `diag`.
#[cfg(test)]
pub fn parse_signature(sig: &syn::Signature, diag: &mut Diagnostics) -> Signature {
    parse_signature_in(sig, &StructDefs::default(), diag)
}

/// As [`parse_signature`], in a `#[graph] mod` whose parameter structs are `structs`.
pub fn parse_signature_in(
    sig: &syn::Signature,
    structs: &StructDefs,
    diag: &mut Diagnostics,
) -> Signature {
    let mut struct_params = Vec::new();
    if let Some(g) = sig.generics.params.first() {
        diag.error(g.span(), "`#[graph]` functions cannot be generic: dtypes and dims are written in `Tensor<DT, dims...>`");
    }
    if let Some(a) = &sig.asyncness {
        diag.error(a.span(), "`#[graph]` functions cannot be `async`");
    }
    let mut params = Vec::new();
    for arg in &sig.inputs {
        match arg {
            FnArg::Receiver(r) => diag.error(
                r.self_token.span(),
                "`#[graph]` functions cannot take `self`: a `#[graph]` fn is a free function (it generates a module `NAME` next to it, which an `impl` block cannot hold); define it outside the `impl` and call it from the method",
            ),
            FnArg::Typed(pt) => {
                let (name, mutable) = match &*pt.pat {
                    Pat::Ident(pi) if pi.by_ref.is_none() && pi.subpat.is_none() => {
                        (pi.ident.clone(), pi.mutability.is_some())
                    }
                    other => {
                        diag.error(
                            other.span(),
                            "a `#[graph]` parameter must be a plain name (`x: Tensor<f32, 3>`)",
                        );
                        continue;
                    }
                };
                if name.to_string().to_lowercase().starts_with(RESERVED_PREFIX) {
                    diag.error(
                        name.span(),
                        format!("the parameter name `{name}` is reserved: names starting with `{RESERVED_PREFIX}` belong to the code `#[graph]` generates; rename the parameter"),
                    );
                    continue;
                }
                if let Type::Reference(r) = written_type(&pt.ty) {
                    if structs.param_type(&r.elem).is_some() {
                        diag.error(
                            crate::ir::SpanRange::of(r),
                            format!("a parameter struct is taken by value (`{name}: {}`, the caller passing `&value`) and cannot be updated in place: return the new struct, or declare the tensors the function updates as `&mut Tensor<..>` parameters", quote::ToTokens::to_token_stream(&r.elem)),
                        );
                        continue;
                    }
                }
                if let Some(e) = structs.layer_type_error(&pt.ty) {
                    diag.push(e);
                    continue;
                }
                if let Some(sty) = structs.param_type(&pt.ty) {
                    if let Some(sp) = flatten_struct_param(name, mutable, &pt.ty, &sty, structs, &mut params, diag) {
                        struct_params.push(sp);
                    }
                    continue;
                }
                if let Some(p) = parse_param(name, mutable, &pt.ty, diag) {
                    params.push(p);
                }
            }
        }
    }
    let dim_spans: Vec<(String, Vec<proc_macro2::Span>)> = sig
        .inputs
        .iter()
        .filter_map(|arg| match arg {
            FnArg::Typed(pt) => match &*pt.pat {
                Pat::Ident(pi) => Some((pi.ident.to_string(), dim_spans(&pt.ty))),
                _ => None,
            },
            FnArg::Receiver(_) => None,
        })
        .collect();
    // In a `#[graph] mod`, a dim named by one of the module's integer `const`s is its value.
    for p in &mut params {
        if let Param::Tensor(t) = p {
            for d in &mut t.shape {
                *d = structs.resolve_dim(d);
            }
        }
    }
    check_product_params(&params, &dim_spans, diag);
    let (outputs, results) = match &sig.output {
        ReturnType::Default => {
            diag.error(
                sig.ident.span(),
                format!(
                    "`#[graph]` function `{}` has no return type: declare its result, e.g. `-> Tensor<f32, B, 10>`, or a tuple of tensors",
                    sig.ident
                ),
            );
            (Vec::new(), ResultTree::Tuple(Vec::new()))
        }
        ReturnType::Type(_, ty) => {
            let mut outputs = Vec::new();
            let tree = parse_result(ty, &mut outputs, diag, "the result", structs);
            for o in &mut outputs {
                for d in &mut o.shape {
                    *d = structs.resolve_dim(d);
                }
            }
            (outputs, tree.unwrap_or(ResultTree::Tuple(Vec::new())))
        }
    };
    Signature {
        params,
        outputs,
        results,
        struct_params,
    }
}

/// Pushes one tensor parameter per leaf of the struct parameter `name: ty` (named
/// `__grafo_<name>_<k>`, labelled by their field paths) and returns the struct's tree.
fn flatten_struct_param(
    name: syn::Ident,
    mutable: bool,
    ty: &Type,
    sty: &FieldTy,
    structs: &StructDefs,
    params: &mut Vec<Param>,
    diag: &mut Diagnostics,
) -> Option<StructParam> {
    if !structs.type_ok(sty) {
        // The struct's own errors are reported where it is declared.
        diag.fail_quietly();
        return None;
    }
    let leaves = structs.leaves(sty);
    if leaves.is_empty() {
        diag.error(
            ty.span(),
            format!("`{name}` has no tensor: a struct parameter passes its tensors, and this type holds none"),
        );
        return None;
    }
    let first = params.len();
    // A type naming a library struct is spelt by its path in the generated signature
    // (`&::grafo::layers::Dense<4, 3>`), whatever the user's module has in scope.
    let root_ty: Type = if crate::structs::layers::mentions_instance(ty) {
        syn::parse2(crate::structs::emit::rust_type(sty)).unwrap_or_else(|_| ty.clone())
    } else {
        ty.clone()
    };
    for (k, leaf) in leaves.iter().enumerate() {
        let segs = leaf.segs.iter().map(|s| match s {
            Seg::Field(f) => quote::quote!(.#f),
            Seg::Index(i) => {
                let i = proc_macro2::Literal::usize_unsuffixed(*i);
                quote::quote!([#i])
            }
        });
        params.push(Param::Tensor(TensorParam {
            name: syn::Ident::new(&format!("{RESERVED_PREFIX}_{name}_{k}"), name.span()),
            dtype: leaf.dtype,
            shape: leaf.shape.iter().map(|&n| Dim::Const(n)).collect(),
            span: ty.span(),
            mutable: false,
            in_place: false,
            field: Some(Box::new(FieldOf {
                root: name.clone(),
                root_ty: root_ty.clone(),
                path: format!("{name}{}", leaf.rust_path()),
                access: quote::quote!(#(#segs)*),
                first: k == 0,
            })),
        }));
    }
    let mut next = first;
    let tree = struct_tree(structs, sty, &mut next, &mut |_, _| {});
    Some(StructParam {
        name,
        tree,
        mutable,
    })
}

fn parse_param(
    name: syn::Ident,
    mutable: bool,
    ty: &Type,
    diag: &mut Diagnostics,
) -> Option<Param> {
    let ty = written_type(ty);
    if let Type::Reference(r) = ty {
        return parse_reference_param(name, mutable, r, diag);
    }
    if is_tensor_type(ty) {
        let (dtype, shape) = parse_tensor_type(ty, diag, "a parameter")?;
        return Some(Param::Tensor(TensorParam {
            name,
            dtype,
            shape,
            span: ty.span(),
            mutable,
            in_place: false,
            field: None,
        }));
    }
    if let Type::Path(tp) = ty {
        if let Some(id) = tp.path.get_ident() {
            let dtype = match id.to_string().as_str() {
                "f32" => Some(DType::F32),
                "f64" => Some(DType::F64),
                "i32" => Some(DType::I32),
                "i64" | "usize" | "isize" | "u32" | "u64" => Some(DType::I64),
                "bool" => Some(DType::Bool),
                _ => None,
            };
            if let Some(dtype) = dtype {
                return Some(Param::Host(HostParam {
                    name,
                    ty: ty.clone(),
                    dtype,
                    mutable,
                }));
            }
        }
    }
    diag.error(
        ty.span(),
        format!(
            "unsupported parameter type for `{name}`: a `#[graph]` parameter is `Tensor<DT, dims...>` (DT one of {DTYPES}) or a host value of type `f32`, `f64`, `i32`, `i64`, `usize` or `bool`"
        ),
    );
    None
}

/// A parameter of a reference type: `w: &mut Tensor<DT, dims...>` is a tensor updated in
/// place; `&Tensor<..>` and references to host values are errors saying what to write.
fn parse_reference_param(
    name: syn::Ident,
    mutable: bool,
    r: &syn::TypeReference,
    diag: &mut Diagnostics,
) -> Option<Param> {
    let elem = written_type(&r.elem);
    if !is_tensor_type(elem) {
        let what = if r.mutability.is_some() {
            format!("`{name}` cannot be updated in place: `&mut` is for tensor parameters, and a host value is read-only; a scalar the function updates is a rank-0 tensor, `{name}: &mut Tensor<f32>`")
        } else {
            format!("unsupported parameter type for `{name}`: a host value is taken by value (`{name}: f32`), not by reference")
        };
        diag.error(crate::ir::SpanRange::of(r), what);
        return None;
    }
    if r.mutability.is_none() {
        diag.error(
            crate::ir::SpanRange::of(r),
            format!("`{name}` is a shared reference to a tensor: a tensor parameter is written `{name}: Tensor<..>` (the caller still passes `&array`, without a copy), or `{name}: &mut Tensor<..>` for a parameter the function updates in place"),
        );
        return None;
    }
    let (dtype, shape) = parse_tensor_type(elem, diag, "a parameter")?;
    Some(Param::Tensor(TensorParam {
        name,
        dtype,
        shape,
        span: elem.span(),
        mutable,
        in_place: true,
        field: None,
    }))
}

/// The type as written, without the invisible group a `macro_rules!` `$t:ty` arrives in or parentheses.
fn written_type(ty: &Type) -> &Type {
    match ty {
        Type::Group(g) => written_type(&g.elem),
        Type::Paren(p) => written_type(&p.elem),
        other => other,
    }
}

fn is_tensor_type(ty: &Type) -> bool {
    match written_type(ty) {
        Type::Path(tp) => tp.path.segments.last().is_some_and(|s| s.ident == "Tensor"),
        _ => false,
    }
}

/// Parses `Tensor<DT, D0, D1, ...>` into a dtype and a shape.
pub fn parse_tensor_type(ty: &Type, diag: &mut Diagnostics, what: &str) -> Option<(DType, Shape)> {
    let ty = written_type(ty);
    let seg = match ty {
        Type::Path(tp) if is_tensor_type(ty) => tp.path.segments.last()?,
        other => {
            diag.error(other.span(), format!("{what} of a `#[graph]` function must be `Tensor<DT, dims...>` (DT one of {DTYPES})"));
            return None;
        }
    };
    let args = match &seg.arguments {
        PathArguments::AngleBracketed(a) => a,
        _ => {
            diag.error(seg.span(), format!("`Tensor` needs a dtype: `Tensor<f32>` for a scalar, `Tensor<f32, B, 3>` for a tensor (dtype one of {DTYPES})"));
            return None;
        }
    };
    let mut iter = args.args.iter();
    let dtype = match iter.next() {
        Some(GenericArgument::Type(Type::Path(p))) if p.path.get_ident().is_some() => {
            let id = p.path.get_ident()?;
            match DType::from_name(&id.to_string()) {
                Some(d) => d,
                None => {
                    diag.error(
                        id.span(),
                        format!("unknown dtype `{id}`: a tensor's dtype is one of {DTYPES}"),
                    );
                    return None;
                }
            }
        }
        Some(other) => {
            diag.error(
                other.span(),
                format!("the first argument of `Tensor` is its dtype, one of {DTYPES}"),
            );
            return None;
        }
        None => {
            diag.error(
                seg.span(),
                format!("`Tensor` needs a dtype, one of {DTYPES}"),
            );
            return None;
        }
    };
    let mut shape = Vec::new();
    let mut ok = true;
    for arg in iter {
        match parse_dim(arg) {
            Some(d) => shape.push(d),
            None => {
                let found = quote::ToTokens::to_token_stream(arg).to_string();
                diag.error(
                    syn::spanned::Spanned::span(&arg),
                    format!("a `Tensor` dim is a non-negative integer literal (`784`), a symbol (`B`) or a product of them in braces (`{{B * 4}}`); found `{found}`"),
                );
                ok = false;
            }
        }
    }
    ok.then_some((dtype, shape))
}

/// A dim written as an expression in braces: a literal, a symbol, or a product of them
/// (`{B * 4}`, `{B * H * 64}`), normalised as the shape system holds it (`B*4`).
fn dim_of_expr(e: &syn::Expr) -> Option<Dim> {
    match e {
        syn::Expr::Lit(l) => match &l.lit {
            syn::Lit::Int(i) if i.suffix().is_empty() || i.suffix() == "usize" => {
                i.base10_parse::<u64>().ok().map(Dim::Const)
            }
            _ => None,
        },
        syn::Expr::Path(p) if p.qself.is_none() => {
            p.path.get_ident().map(|i| Dim::Sym(i.to_string()))
        }
        syn::Expr::Binary(b) if matches!(b.op, syn::BinOp::Mul(_)) => {
            dim_of_expr(&b.left)?.times(&dim_of_expr(&b.right)?)
        }
        syn::Expr::Paren(p) => dim_of_expr(&p.expr),
        syn::Expr::Group(g) => dim_of_expr(&g.expr),
        _ => None,
    }
}

/// Checks that every product dim of the parameters can be bound at the call: each of its
/// symbols is a plain dim of some parameter, except at most one, which appears once and which
/// the axis's size then binds (`{B * 4}` of a size 12 makes `B` 3). Dims are bound in the
/// order the parameters list them, as `emit::entry_checks` does.
fn check_product_params(
    params: &[Param],
    dim_spans: &[(String, Vec<proc_macro2::Span>)],
    diag: &mut Diagnostics,
) {
    let mut bound: Vec<String> = Vec::new();
    for p in params {
        if let Param::Tensor(t) = p {
            for d in &t.shape {
                if let Dim::Sym(s) = d {
                    bound.push(s.clone());
                }
            }
        }
    }
    for p in params {
        let Param::Tensor(t) = p else { continue };
        for (axis, d) in t.shape.iter().enumerate() {
            let Dim::Prod(m) = d else { continue };
            let mut unbound: Vec<&String> = m.syms.iter().filter(|s| !bound.contains(s)).collect();
            let count = unbound.len();
            unbound.dedup();
            match unbound.as_slice() {
                [] => {}
                [s] if count == 1 => bound.push((*s).clone()),
                _ => {
                    let names: Vec<String> = unbound.iter().map(|s| format!("`{s}`")).collect();
                    // The span of the dim itself, else of the parameter's type.
                    let span = dim_spans
                        .iter()
                        .find(|(n, _)| t.name == n.as_str())
                        .and_then(|(_, spans)| spans.get(axis).copied())
                        .unwrap_or(t.span);
                    diag.error(
                        span,
                        format!(
                            "axis {axis} of `{}` is `{m}`, but {} in no plain dim of any parameter, so its size cannot bind {}; a product may have one such symbol, once: declare the others as a dim of their own (`Tensor<f32, B, ..>`)",
                            t.name,
                            if names.len() == 1 { format!("{} appears more than once and", names[0]) } else { format!("{} appear", names.join(" and ")) },
                            if names.len() == 1 { "it" } else { "them" }
                        ),
                    );
                }
            }
        }
    }
}

/// The spans of a `Tensor<DT, dims...>` type's dims, one per axis (none for another type).
fn dim_spans(ty: &Type) -> Vec<proc_macro2::Span> {
    let tp = match written_type(ty) {
        Type::Path(tp) => tp,
        Type::Reference(r) => match written_type(&r.elem) {
            Type::Path(tp) => tp,
            _ => return Vec::new(),
        },
        _ => return Vec::new(),
    };
    match tp.path.segments.last().map(|s| &s.arguments) {
        Some(PathArguments::AngleBracketed(a)) => a.args.iter().skip(1).map(|g| g.span()).collect(),
        _ => Vec::new(),
    }
}

fn parse_dim(arg: &GenericArgument) -> Option<Dim> {
    match arg {
        GenericArgument::Const(syn::Expr::Lit(l)) => match &l.lit {
            syn::Lit::Int(i) if i.suffix().is_empty() || i.suffix() == "usize" => {
                i.base10_parse::<u64>().ok().map(Dim::Const)
            }
            _ => None,
        },
        GenericArgument::Const(syn::Expr::Block(b)) if b.block.stmts.len() == 1 => {
            match &b.block.stmts[0] {
                syn::Stmt::Expr(syn::Expr::Lit(l), None) => match &l.lit {
                    syn::Lit::Int(i) => i.base10_parse::<u64>().ok().map(Dim::Const),
                    _ => None,
                },
                syn::Stmt::Expr(e, None) => dim_of_expr(e),
                _ => None,
            }
        }
        GenericArgument::Type(Type::Path(p)) => p.path.get_ident().map(|i| Dim::Sym(i.to_string())),
        _ => None,
    }
}
