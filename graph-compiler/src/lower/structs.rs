//! Parameter structs in a body: a struct parameter's value tree, field access (`p.hidden.w`),
//! indexing an array field at compile time (`p.blocks[i]`), and struct literals
//! (`Net { hidden: .., ..p }`, how a function builds a struct to return).
//!
//! A struct value is a tree of values ([`Value::Struct`], [`Value::Array`]) whose leaves are
//! tensors; nothing of the struct is left at run time, where each leaf is a parameter (or
//! result) of its own.

use super::context::Value;
use super::{Lowerer, Span};
use crate::ir::*;
use crate::signature::ResultTree;
use crate::structs::{layers, FieldTy, StructDef};
use std::collections::HashMap;
use syn::Expr;

/// Whether `x[...]` is a tensor slice (`x[s![..]]`) rather than an index into an array field.
pub(super) fn is_slice(ix: &syn::ExprIndex) -> bool {
    matches!(super::unwrapped(&ix.index), Expr::Macro(m) if m.mac.path.is_ident("s"))
}

/// The value of a struct tree (a parameter's, a callee's result) whose leaf `i` is `leaf(i)`.
pub(super) fn tree_value(tree: &ResultTree, leaf: &mut dyn FnMut(usize) -> Value) -> Value {
    match tree {
        ResultTree::Leaf(i) => leaf(*i),
        ResultTree::Tuple(items) => {
            Value::Tuple(items.iter().map(|t| tree_value(t, leaf)).collect())
        }
        ResultTree::Struct { ty, fields } => Value::Struct {
            ty: ty.clone(),
            fields: fields
                .iter()
                .map(|(f, t)| (f.clone(), tree_value(t, leaf)))
                .collect(),
        },
        ResultTree::Array(items) => {
            Value::Array(items.iter().map(|t| tree_value(t, leaf)).collect())
        }
    }
}

/// The leaves of a struct (or array) value with their paths after `prefix` (`p.blocks[0].wq`),
/// in declaration order. A leaf that is not a tensor is returned as it is.
pub(super) fn leaves_of(v: &Value, prefix: &str, out: &mut Vec<(String, Value)>) {
    match v {
        Value::Struct { fields, .. } => {
            for (f, fv) in fields {
                leaves_of(fv, &format!("{prefix}.{f}"), out);
            }
        }
        Value::Array(vs) => {
            for (i, ev) in vs.iter().enumerate() {
                leaves_of(ev, &format!("{prefix}[{i}]"), out);
            }
        }
        other => out.push((prefix.to_string(), other.clone())),
    }
}

/// The same struct value with its leaves replaced, in order, by `next()`.
pub(super) fn replace_leaves(v: &Value, next: &mut dyn FnMut() -> Value) -> Value {
    match v {
        Value::Struct { ty, fields } => Value::Struct {
            ty: ty.clone(),
            fields: fields
                .iter()
                .map(|(f, fv)| (f.clone(), replace_leaves(fv, next)))
                .collect(),
        },
        Value::Array(vs) => Value::Array(vs.iter().map(|ev| replace_leaves(ev, next)).collect()),
        _ => next(),
    }
}

/// An expression as a short path for messages (`p.blocks[i]`), or `this value`.
pub(super) fn expr_text(e: &Expr) -> String {
    match super::unwrapped(e) {
        Expr::Path(p) => p
            .path
            .get_ident()
            .map_or_else(|| "this value".to_string(), |i| i.to_string()),
        Expr::Field(f) => {
            let member = match &f.member {
                syn::Member::Named(n) => n.to_string(),
                syn::Member::Unnamed(i) => i.index.to_string(),
            };
            format!("{}.{member}", expr_text(&f.base))
        }
        Expr::Index(ix) => {
            let index = match super::unwrapped(&ix.index) {
                Expr::Lit(syn::ExprLit {
                    lit: syn::Lit::Int(i),
                    ..
                }) => i.to_string(),
                Expr::Path(p) if p.path.get_ident().is_some() => p
                    .path
                    .get_ident()
                    .map(|i| i.to_string())
                    .unwrap_or_default(),
                _ => "..".to_string(),
            };
            format!("{}[{index}]", expr_text(&ix.expr))
        }
        _ => "this value".to_string(),
    }
}

/// A struct type with its article, for messages: "a `Dense`", "an `Other`".
pub(super) fn a_struct(ty: &syn::Ident) -> String {
    let name = layers::display(ty);
    let vowel = name.starts_with(['A', 'E', 'I', 'O', 'U', 'a', 'e', 'i', 'o', 'u']);
    format!("{} `{name}`", if vowel { "an" } else { "a" })
}

/// The field names of a struct value, for messages: "`w` and `b`".
fn names_list(fields: &[(syn::Ident, Value)]) -> String {
    let names: Vec<String> = fields.iter().map(|(f, _)| format!("`{f}`")).collect();
    match names.as_slice() {
        [] => "none".to_string(),
        [one] => one.clone(),
        [rest @ .., last] => format!("{} and {last}", rest.join(", ")),
    }
}

impl Lowerer<'_> {
    /// `base.member` where `base` is a struct value (or an array, which has no fields).
    pub(super) fn lower_struct_field(
        &mut self,
        f: &syn::ExprField,
        member: &syn::Member,
        base: Value,
    ) -> Value {
        let span: Span = f.span();
        let base_text = expr_text(&f.base);
        let member_text = match member {
            syn::Member::Named(n) => n.to_string(),
            syn::Member::Unnamed(i) => i.index.to_string(),
        };
        match base {
            Value::Struct { ty, fields } => {
                if let Some((_, v)) = fields.iter().find(|(n, _)| *n == member_text) {
                    return v.clone();
                }
                let msg = format!(
                    "`{base_text}` is {}, which has no field `{member_text}`; its fields are {}",
                    a_struct(&ty),
                    names_list(&fields)
                );
                self.diag.error(member.span(), msg);
            }
            Value::Array(vs) => {
                let msg = format!(
                    "`{base_text}` is an array of {} elements, which has no field `{member_text}`: index it first (`{base_text}[i].{member_text}`)",
                    vs.len()
                );
                self.diag.error(member.span(), msg);
            }
            _ => unreachable!("called on struct and array values"),
        }
        Value::Tensor(self.poisoned(span))
    }

    /// `base[i]` that is not a tensor slice: an array field indexed by an integer known at
    /// compile time (a literal, a `const`, a `for` variable).
    pub(super) fn lower_array_index(&mut self, ix: &syn::ExprIndex) -> Value {
        let span: Span = ix.span();
        let base = self.lower_expr(&ix.expr);
        let Value::Array(vs) = base else {
            if let Value::Tensor(id) = base {
                if self.graph.node(id).poisoned {
                    return Value::Tensor(self.poisoned(span));
                }
            }
            self.diag.error(
                ix.index.span(),
                "a tensor is indexed with ndarray's `s![...]` macro, e.g. `x[s![.., t, 0..10;2]]`",
            );
            return Value::Tensor(self.poisoned(span));
        };
        let base_text = expr_text(&ix.expr);
        let index = self.operand(&ix.index);
        let n = self.graph.node(index).clone();
        if n.poisoned {
            return Value::Tensor(self.poisoned(span));
        }
        let i = match n.op {
            Op::Const {
                value: Scalar::Int(i),
                ..
            } if n.shape.is_empty() => i,
            _ => {
                self.diag.error(
                    ix.index.span(),
                    format!("`{base_text}` is an array of parameters, indexed at compile time: the index must be an integer literal, a `const` or a `for` variable"),
                );
                return Value::Tensor(self.poisoned(span));
            }
        };
        match usize::try_from(i).ok().and_then(|i| vs.get(i)) {
            Some(v) => v.clone(),
            None => {
                let elem = match vs.first() {
                    Some(Value::Struct { ty, .. }) => format!("`{}`", layers::display(ty)),
                    _ => "element".to_string(),
                };
                self.diag.error(
                    ix.index.span(),
                    format!(
                        "index {i} is out of range of `{base_text}`, an array of {} {elem}{} (indices 0..{})",
                        vs.len(),
                        if vs.len() == 1 { "" } else { "s" },
                        vs.len()
                    ),
                );
                Value::Tensor(self.poisoned(span))
            }
        }
    }

    /// `Name { field: value, ..., ..base }`: a value of a parameter struct of the module, or of
    /// a layer of the library (`Dense { kernel: .., bias: .. }`, its dims taken from the
    /// fields, from `..base`, or written, `MultiHeadAttention::<64, 4> { .. }`), each field
    /// checked against its declared type.
    pub(super) fn lower_struct_literal(&mut self, s: &syn::ExprStruct) -> Value {
        let span = SpanRange::of(s);
        let mut given: HashMap<String, Value> = HashMap::new();
        let mut rest_value = None;
        let def = match self.struct_literal_def(s, &mut given, &mut rest_value) {
            Ok(d) => d,
            Err(None) => return Value::Tensor(self.poisoned(span)),
            Err(Some((at, msg))) => {
                self.diag.error(at, msg);
                return Value::Tensor(self.poisoned(span));
            }
        };
        let ty = def.item.ident.clone();
        let shown = layers::display(&ty);
        let rest_value = match (&s.rest, rest_value) {
            (Some(_), Some(v)) => Some(v),
            (Some(base), None) => Some(self.lower_expr(base)),
            (None, _) => None,
        };
        let rest = match (&s.rest, rest_value) {
            (Some(base), Some(v)) => match v {
                Value::Struct { ty: bty, fields } if bty == ty => Some(fields),
                other => {
                    let msg = format!(
                        "`..base` of a `{shown}` literal must be a `{shown}`; found {}",
                        super::value_str(&other, &self.graph)
                    );
                    self.diag.error(base.span(), msg);
                    return Value::Tensor(self.poisoned(span));
                }
            },
            _ => None,
        };
        let mut ok = true;
        for fv in &s.fields {
            let known = matches!(&fv.member, syn::Member::Named(n) if def.fields.iter().any(|f| f.ident == *n));
            if !known {
                let member = match &fv.member {
                    syn::Member::Named(n) => n.to_string(),
                    syn::Member::Unnamed(i) => i.index.to_string(),
                };
                let fields: Vec<(syn::Ident, Value)> = def
                    .fields
                    .iter()
                    .map(|f| (f.ident.clone(), Value::Unit))
                    .collect();
                self.diag.error(
                    fv.member.span(),
                    format!(
                        "`{shown}` has no field `{member}`; its fields are {}",
                        names_list(&fields)
                    ),
                );
                ok = false;
            }
        }
        let mut fields = Vec::new();
        for f in &def.fields {
            let given_expr = s
                .fields
                .iter()
                .find(|fv| matches!(&fv.member, syn::Member::Named(n) if *n == f.ident));
            let path = format!("{shown}.{}", f.ident);
            let value = match (given_expr, &rest) {
                (Some(fv), _) => match given.remove(&f.ident.to_string()) {
                    Some(v) => self.check_field_value(v, &f.ty, &path, fv.expr.span()),
                    None => self.lower_field_value(&fv.expr, &f.ty, &path),
                },
                (None, Some(base)) => base
                    .iter()
                    .find(|(n, _)| *n == f.ident)
                    .map(|(_, v)| v.clone()),
                (None, None) => {
                    self.diag.error(
                        s.path.span(),
                        format!("missing field `{}` in this `{shown}` literal (or take the others from a value with `..p`)", f.ident),
                    );
                    None
                }
            };
            match value {
                Some(v) => fields.push((f.ident.clone(), v)),
                None => ok = false,
            }
        }
        if !ok {
            return Value::Tensor(self.poisoned(span));
        }
        Value::Struct { ty, fields }
    }

    /// The struct a literal builds: a parameter struct of the module by its name, or an
    /// instance of a library layer. A layer's dims come from its generic arguments, else
    /// from `..base` (lowered into `rest`), else from the fields that hold them (lowered
    /// into `given`). `Err(None)` after an error already reported.
    #[allow(clippy::type_complexity)]
    fn struct_literal_def(
        &mut self,
        s: &syn::ExprStruct,
        given: &mut HashMap<String, Value>,
        rest: &mut Option<Value>,
    ) -> Result<StructDef, Option<(Span, String)>> {
        let structs = self.callees.structs();
        if let Some(d) = s
            .path
            .get_ident()
            .and_then(|id| structs.get(&id.to_string()))
            .filter(|d| d.ok)
        {
            return Ok(d.into_owned());
        }
        let Some(kind) = layers::kind_of_path(&s.path) else {
            let name = quote::ToTokens::to_token_stream(&s.path).to_string();
            return Err(Some((
                s.path.span(),
                format!("`{name}` is not a parameter struct of this `#[graph] mod`: a struct literal in a body builds one of them, or a layer of grafo's library (`Dense {{ kernel: .., bias: .. }}`)"),
            )));
        };
        let last = s.path.segments.last().expect("a path has a segment");
        let ident = if let syn::PathArguments::AngleBracketed(a) = &last.arguments {
            let args: Vec<&syn::GenericArgument> = a.args.iter().collect();
            let dims = self.callees.structs().dims().clone();
            layers::read_args(kind, &args, &dims, last.span().start)
                .map_err(|e| Some((e.span().into(), e.to_string())))?
        } else if let Some(base) = &s.rest {
            let v = self.lower_expr(base);
            let id = match &v {
                Value::Struct { ty, .. }
                    if layers::instance(ty).is_some_and(|i| i.kind == kind) =>
                {
                    ty.clone()
                }
                Value::Tensor(id) if self.graph.node(*id).poisoned => return Err(None),
                other => {
                    let msg = format!(
                        "`..base` of a `{}` literal must be a `{}`; found {}",
                        kind.name(),
                        kind.form(),
                        super::value_str(other, &self.graph)
                    );
                    return Err(Some((base.span(), msg)));
                }
            };
            *rest = Some(v);
            id
        } else {
            let Some(sources) = layers::dim_sources(kind) else {
                let msg = format!(
                    "a `{}` literal needs its dims written (`{}::<{}> {{ .. }}`): they cannot all be read from its fields",
                    kind.name(),
                    kind.name(),
                    kind.dims().join(", ")
                );
                return Err(Some((s.path.span(), msg)));
            };
            let mut dims = Vec::new();
            let mut dtype = None;
            for (dim, (field, axis)) in kind.dims().iter().zip(sources) {
                let Some(fv) = s
                    .fields
                    .iter()
                    .find(|fv| matches!(&fv.member, syn::Member::Named(n) if n == field))
                else {
                    let msg = format!(
                        "missing field `{field}` in this `{}` literal: its `{dim}` is read from it (or write the dims, `{}::<{}> {{ .. }}`, or take the fields from a value with `..p`)",
                        kind.name(),
                        kind.name(),
                        kind.dims().join(", ")
                    );
                    return Err(Some((s.path.span(), msg)));
                };
                if !given.contains_key(*field) {
                    let v = self.lower_expr(&fv.expr);
                    given.insert(field.to_string(), v);
                }
                let found = match &given[*field] {
                    Value::Tensor(id) => {
                        let n = self.graph.node(*id);
                        if n.poisoned {
                            return Err(None);
                        }
                        match n.shape.get(*axis) {
                            Some(Dim::Const(d)) if n.dtype.is_float() => Some((*d, n.dtype)),
                            _ => None,
                        }
                    }
                    _ => None,
                };
                let Some((d, dt)) = found else {
                    let v = super::value_str(&given[*field], &self.graph);
                    let msg = format!(
                        "field `{field}` of this `{}` literal is {v}: a float tensor whose axis {axis} is a static dim (the layer's `{dim}`) was expected",
                        kind.name()
                    );
                    return Err(Some((fv.expr.span(), msg)));
                };
                dims.push(d);
                dtype.get_or_insert(dt);
            }
            let dims_map = self.callees.structs().dims().clone();
            let args: Vec<syn::GenericArgument> = dims
                .iter()
                .map(|d| syn::parse_str(&d.to_string()).expect("an integer literal"))
                .chain(
                    dtype
                        .filter(|dt| *dt != DType::F32)
                        .map(|dt| syn::parse_str(dt.name()).expect("a type")),
                )
                .collect();
            let refs: Vec<&syn::GenericArgument> = args.iter().collect();
            layers::read_args(kind, &refs, &dims_map, s.path.span().start)
                .map_err(|e| Some((e.span().into(), e.to_string())))?
        };
        Ok(layers::def_of(&ident).expect("an instance's identifier"))
    }

    /// A field's value in a struct literal, checked against the field's type `ty` (an array
    /// field may be written as an array literal, `[b0, b1]`).
    fn lower_field_value(&mut self, e: &Expr, ty: &FieldTy, path: &str) -> Option<Value> {
        if let (FieldTy::Array(inner, n), Expr::Array(a)) = (ty, super::unwrapped(e)) {
            if a.elems.len() != *n {
                self.diag.error(
                    e.span(),
                    format!(
                        "field `{path}` is an array of {n}; this array literal has {} elements",
                        a.elems.len()
                    ),
                );
                return None;
            }
            let mut vs = Vec::new();
            for (i, el) in a.elems.iter().enumerate() {
                vs.push(self.lower_field_value(el, inner, &format!("{path}[{i}]"))?);
            }
            return Some(Value::Array(vs));
        }
        let v = self.lower_expr(e);
        self.check_field_value(v, ty, path, e.span())
    }

    /// Checks a value against a field's declared type; a tensor of the declared dtype and
    /// shape (a weak literal takes the dtype), a struct of the same type, an array of as many.
    fn check_field_value(
        &mut self,
        v: Value,
        ty: &FieldTy,
        path: &str,
        span: Span,
    ) -> Option<Value> {
        match ty {
            FieldTy::Tensor { dtype, shape } => {
                let id = self.tensor_of(&v, span, &format!("field `{path}`"))?;
                let id = self.resolve_weak_to(id, *dtype, span);
                let n = self.graph.node(id).clone();
                if n.poisoned {
                    return None;
                }
                let declared: Shape = shape.iter().map(|&d| Dim::Const(d)).collect();
                if n.dtype != *dtype || n.shape != declared {
                    self.diag.error(
                        span,
                        format!(
                            "field `{path}` is declared {} but this value is {}",
                            type_str(*dtype, &declared),
                            type_str(n.dtype, &n.shape)
                        ),
                    );
                    return None;
                }
                Some(Value::Tensor(id))
            }
            FieldTy::Struct(s) => match v {
                Value::Struct { ref ty, .. } if ty == s => Some(v),
                Value::Tensor(id) if self.graph.node(id).poisoned => None,
                other => {
                    let msg = format!(
                        "field `{path}` is {}; found {}",
                        a_struct(s),
                        super::value_str(&other, &self.graph)
                    );
                    self.diag.error(span, msg);
                    None
                }
            },
            FieldTy::Array(inner, n) => match v {
                Value::Array(vs) if vs.len() == *n => {
                    let mut out = Vec::new();
                    for (i, ev) in vs.into_iter().enumerate() {
                        out.push(self.check_field_value(
                            ev,
                            inner,
                            &format!("{path}[{i}]"),
                            span,
                        )?);
                    }
                    Some(Value::Array(out))
                }
                Value::Tensor(id) if self.graph.node(id).poisoned => None,
                other => {
                    let msg = format!(
                        "field `{path}` is an array of {n}; found {}",
                        super::value_str(&other, &self.graph)
                    );
                    self.diag.error(span, msg);
                    None
                }
            },
        }
    }
}
