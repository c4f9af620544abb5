//! Phase 2, lower: turns the function body into graph nodes, resolving names, literals, `if` (cond nodes) and unrolled `for`.
//!
//! Each node is typed as it is created (the rules are in `infer.rs`), so a weak literal
//! takes its partner's dtype and every error points at the expression it came from.
//! A node whose operands could not be typed is poisoned: it is kept, but no further error
//! is reported about it, so one mistake gives one message.

use crate::diag::Diagnostics;
use crate::infer;
use crate::ir::*;
use crate::ops::{self, Kind, Lowering, OpRow, TypeParam};
use crate::signature::{ResultTree, Signature};
use proc_macro2::TokenStream;
/// Lowering works with source ranges, so errors underline whole expressions.
type Span = SpanRange;
use quote::{quote, ToTokens};
use std::collections::HashMap;
use syn::{BinOp, Expr, Lit, Pat, Stmt, UnOp};

mod activations;
mod inline;
pub use inline::{Callee, Callees};
mod nn;
mod selection;
pub use selection::attrs as selection_attrs;

/// A value a name can hold while lowering.
#[derive(Debug, Clone)]
enum Value {
    Tensor(NodeId),
    Tuple(Vec<Value>),
    /// A host-only value (parameter or const): usable in host `if` conditions and as a scalar operand.
    Host {
        tokens: TokenStream,
        dtype: DType,
        node: Option<NodeId>,
    },
    /// A statement-like expression with no value (`assert_*`, `if` without a value).
    Unit,
}

struct Binding {
    value: Value,
    mutable: bool,
}

/// An arm being lowered: records the outer variables it reassigns (AutoGraph's rule).
struct ArmFrame {
    base_depth: usize,
    assigned: Vec<String>,
}

struct Lowerer<'a> {
    graph: Graph,
    diag: &'a mut Diagnostics,
    scopes: Vec<HashMap<String, Binding>>,
    arms: Vec<ArmFrame>,
    region: Region,
    /// Effects (asserts) of the region being lowered.
    effects: Vec<NodeId>,
    symbols: Vec<String>,
    consts: HashMap<String, Scalar>,
    /// The operator being lowered (`+`), for messages.
    operator: Option<String>,
    /// The other graph functions of the `#[graph] mod`, which calls inline.
    callees: &'a Callees,
    /// While a callee is inlined: the root function's dim each of its symbols stands for.
    dim_subst: HashMap<String, Dim>,
}

/// The lowered graph plus the node of each tensor parameter.
pub struct Lowered {
    pub graph: Graph,
}

/// Lowers `body` with the parameters of `sig`; its results are checked against the declared ones.
pub fn lower(
    sig: &Signature,
    body: &syn::Block,
    fn_span: Span,
    diag: &mut Diagnostics,
    callees: &Callees,
) -> Lowered {
    let (params, outputs) = (&sig.params, &sig.outputs);
    let mut lw = Lowerer {
        graph: Graph::default(),
        diag,
        scopes: vec![HashMap::new()],
        arms: Vec::new(),
        region: Region::Main,
        effects: Vec::new(),
        symbols: Vec::new(),
        consts: HashMap::new(),
        operator: None,
        callees,
        dim_subst: HashMap::new(),
    };
    for (i, p) in params.iter().enumerate() {
        match p {
            Param::Tensor(t) => {
                for d in &t.shape {
                    if let Dim::Sym(s) = d {
                        if !lw.symbols.contains(s) {
                            lw.symbols.push(s.clone());
                        }
                    }
                }
                let id = lw.push(
                    Op::Input { param: i },
                    vec![],
                    t.dtype,
                    t.shape.clone(),
                    t.span.into(),
                );
                lw.graph.node_mut(id).name = Some(t.name.to_string());
                lw.bind(&t.name.to_string(), Value::Tensor(id), t.mutable);
            }
            Param::Host(h) => {
                let name = &h.name;
                lw.graph.host_idents.push(name.clone());
                lw.bind(
                    &name.to_string(),
                    Value::Host {
                        tokens: quote!(#name),
                        dtype: h.dtype,
                        node: None,
                    },
                    h.mutable,
                );
            }
        }
    }
    let result = lw.lower_block_inner(body);
    lw.check_weak_ranges();
    lw.graph.effects = std::mem::take(&mut lw.effects);
    let ret_span = body.stmts.last().map_or(fn_span, |s| s.span());
    if matches!(result, Value::Unit) && !outputs.is_empty() {
        let msg = "the body of a `#[graph]` function must end with its result: an expression without `;` (a tensor, or a tuple of tensors)";
        lw.diag.error(ret_span, msg);
        return Lowered { graph: lw.graph };
    }
    let mut values = Vec::new();
    if !flatten_results(&result, &sig.results, &mut values) {
        let msg = format!(
            "the function declares its results as {} but the body returns {}",
            tree_str(&sig.results, outputs),
            value_str(&result, &lw.graph)
        );
        lw.diag.error(ret_span, msg);
        return Lowered { graph: lw.graph };
    }
    for (i, (v, decl)) in values.iter().zip(outputs).enumerate() {
        if let Some(id) = lw.tensor_of(v, ret_span, "a result") {
            {
                let id = lw.resolve_weak_to(id, decl.dtype, ret_span);
                let n = lw.graph.node(id);
                if !n.poisoned && (n.dtype != decl.dtype || n.shape != decl.shape) {
                    let what = if outputs.len() == 1 {
                        "the result".to_string()
                    } else {
                        format!("result {i}")
                    };
                    let hint = if n.dtype != decl.dtype {
                        format!("; convert it with `cast::<{}>(...)`", decl.dtype)
                    } else {
                        String::new()
                    };
                    let msg = format!(
                        "{what} is declared {} but the body returns {}{hint}",
                        type_str(decl.dtype, &decl.shape),
                        type_str(n.dtype, &n.shape)
                    );
                    lw.diag.error(ret_span, msg);
                }
                lw.graph.outputs.push(id);
            }
        }
    }
    Lowered { graph: lw.graph }
}

/// The values of `result` at the leaves of `tree`, in order; false if the nesting differs.
/// A lone tensor stands for a declared one-element tuple.
fn flatten_results(result: &Value, tree: &ResultTree, out: &mut Vec<Value>) -> bool {
    match (tree, result) {
        (ResultTree::Leaf(_), v) => {
            out.push(v.clone());
            true
        }
        (ResultTree::Tuple(items), Value::Tuple(vs)) if items.len() == vs.len() => items
            .iter()
            .zip(vs)
            .all(|(t, v)| flatten_results(v, t, out)),
        (ResultTree::Tuple(items), v) if items.len() == 1 && !matches!(v, Value::Tuple(_)) => {
            flatten_results(v, &items[0], out)
        }
        _ => false,
    }
}

/// A declared result nesting as the user wrote it: `(f32[B], (f32[B], f32[]))`.
fn tree_str(tree: &ResultTree, outputs: &[OutputDecl]) -> String {
    match tree {
        ResultTree::Leaf(i) => type_str(outputs[*i].dtype, &outputs[*i].shape),
        ResultTree::Tuple(items) => {
            let parts: Vec<String> = items.iter().map(|t| tree_str(t, outputs)).collect();
            format!("({})", parts.join(", "))
        }
    }
}

/// A body's value in the same notation.
fn value_str(v: &Value, graph: &Graph) -> String {
    match v {
        Value::Tensor(id) => {
            let n = graph.node(*id);
            type_str(n.dtype, &n.shape)
        }
        Value::Host { dtype, .. } => format!("{dtype}[] (a host value)"),
        Value::Tuple(vs) => {
            let parts: Vec<String> = vs.iter().map(|v| value_str(v, graph)).collect();
            format!("({})", parts.join(", "))
        }
        Value::Unit => "no value".to_string(),
    }
}

fn line_of(span: Span) -> u32 {
    span.line()
}

/// The expression inside the invisible groups a `macro_rules!` fragment arrives in.
fn unwrapped(e: &Expr) -> &Expr {
    match e {
        Expr::Group(g) => unwrapped(&g.expr),
        other => other,
    }
}

/// The values of a dtype, for messages.
fn range_text(dtype: DType) -> String {
    match dtype {
        DType::I32 => format!("{} holds {}..={}", dtype, i32::MIN, i32::MAX),
        DType::I64 => format!("{} holds {}..={}", dtype, i64::MIN, i64::MAX),
        DType::F32 => format!("the largest finite {dtype} is {:e}", f32::MAX),
        DType::F64 => format!("the largest finite {dtype} is {:e}", f64::MAX),
        DType::Bool => "bool holds `true` and `false`".into(),
    }
}

/// `Some(range)` when constant `value` does not fit `dtype`: an integer outside its range,
/// or a finite float that would round to infinity (as rustc's `overflowing_literals`).
fn out_of_range(value: Scalar, dtype: DType) -> Option<String> {
    let fits = match (value, dtype) {
        (Scalar::Int(v), DType::I32) => i32::try_from(v).is_ok(),
        (Scalar::Float(v), DType::F32) => !v.is_finite() || (v as f32).is_finite(),
        _ => true,
    };
    (!fits).then(|| range_text(dtype))
}

/// The size in bytes of the static dims of `shape` (those that are not 0, as ndarray counts),
/// `None` if it overflows an `isize`: no array can be that large. Symbols count as 1 here;
/// their sizes are checked at run time.
fn static_bytes(shape: &[Dim], dtype: DType) -> Option<u64> {
    let mut bytes = dtype.size_bytes();
    for d in shape {
        if let Dim::Const(n) = d {
            if *n != 0 {
                bytes = bytes.checked_mul(*n)?;
            }
        }
    }
    (bytes <= isize::MAX as u64).then_some(bytes)
}

impl Lowerer<'_> {
    fn push(
        &mut self,
        op: Op,
        inputs: Vec<NodeId>,
        dtype: DType,
        shape: Shape,
        span: Span,
    ) -> NodeId {
        let too_big = static_bytes(&shape, dtype).is_none();
        if too_big {
            self.diag.error(
                span,
                format!(
                    "the value {} is larger than any array can be: its size in bytes does not fit in an `isize`",
                    type_str(dtype, &shape)
                ),
            );
        }
        self.graph.push(Node {
            op,
            inputs,
            dtype,
            shape,
            span,
            line: line_of(span),
            name: None,
            region: self.region,
            poisoned: too_big,
        })
    }

    /// Any weak constant still out of its dtype's range where an op reads it (the paths
    /// that retype weak operands check it there; this catches the others).
    fn check_weak_ranges(&mut self) {
        let mut reported = Vec::new();
        for n in &self.graph.nodes {
            if n.poisoned {
                continue;
            }
            for &i in &n.inputs {
                let input = self.graph.node(i);
                if let Op::Const { value, weak: true } = input.op {
                    if let Some(range) = out_of_range(value, input.dtype) {
                        if !reported.contains(&i) {
                            reported.push(i);
                            self.diag.error(input.span, format!("the constant `{value}` is out of range for {}, the dtype it takes here ({range})", input.dtype));
                        }
                    }
                }
            }
        }
    }

    fn poisoned(&mut self, span: Span) -> NodeId {
        let id = self.push(
            Op::Const {
                value: Scalar::Float(0.0),
                weak: false,
            },
            vec![],
            DType::F32,
            vec![],
            span,
        );
        self.graph.node_mut(id).poisoned = true;
        id
    }

    fn is_poisoned(&self, ids: &[NodeId]) -> bool {
        ids.iter().any(|&i| self.graph.node(i).poisoned)
    }

    /// Creates a node from an inference result, reporting its error at `span`.
    fn typed(&mut self, op: Op, inputs: Vec<NodeId>, r: infer::Inferred, span: Span) -> NodeId {
        if self.is_poisoned(&inputs) {
            return self.poisoned(span);
        }
        self.typed_with(inputs, r.map(|t| ((), t)), |()| op, span, span)
    }

    /// As [`Lowerer::typed`] for an op built from what inference found (`make(found)`), with
    /// the error reported at `error_span` (the argument at fault); inputs are not re-checked
    /// for poison.
    fn typed_with<A>(
        &mut self,
        inputs: Vec<NodeId>,
        r: Result<(A, (DType, Shape)), String>,
        make: impl FnOnce(A) -> Op,
        error_span: Span,
        span: Span,
    ) -> NodeId {
        match r {
            Ok((found, (dt, shape))) => self.push(make(found), inputs, dt, shape, span),
            Err(msg) => {
                self.diag.error(error_span, msg);
                self.poisoned(span)
            }
        }
    }

    fn bind(&mut self, name: &str, value: Value, mutable: bool) {
        if let Value::Tensor(id) = value {
            let n = self.graph.node_mut(id);
            if n.name.is_none() && !matches!(n.op, Op::Input { .. }) {
                n.name = Some(name.to_string());
            }
        }
        self.scopes
            .last_mut()
            .expect("a scope")
            .insert(name.to_string(), Binding { value, mutable });
    }

    fn lookup(&self, name: &str) -> Option<(usize, &Binding)> {
        self.scopes
            .iter()
            .enumerate()
            .rev()
            .find_map(|(d, s)| s.get(name).map(|b| (d, b)))
    }

    fn assign(&mut self, name: &str, value: Value, span: Span) {
        let depth = match self.lookup(name) {
            None => {
                self.diag.error(span, format!("cannot assign to `{name}`: no such variable (declare it first with `let mut {name} = ...`)"));
                return;
            }
            Some((_, b)) if !b.mutable => {
                self.diag.error(span, format!("cannot assign twice to immutable variable `{name}`: declare it with `let mut {name}`"));
                return;
            }
            Some((d, _)) => d,
        };
        if let Some(frame) = self.arms.last_mut() {
            if depth < frame.base_depth && !frame.assigned.iter().any(|n| n == name) {
                frame.assigned.push(name.to_string());
            }
        }
        if let Value::Tensor(id) = value {
            let n = self.graph.node_mut(id);
            if n.name.is_none() {
                n.name = Some(name.to_string());
            }
        }
        self.scopes[depth].get_mut(name).expect("found above").value = value;
    }

    // ----- weak literals -------------------------------------------------------------------

    fn is_weak(&self, id: NodeId) -> bool {
        matches!(
            self.graph.node(id).op,
            Op::Const { weak: true, .. } | Op::Host { .. }
        )
    }

    /// A copy of weak node `id` typed as `dtype`; a float literal cannot become an integer.
    fn retype(&mut self, id: NodeId, dtype: DType, span: Span) -> NodeId {
        let n = self.graph.node(id).clone();
        match n.op {
            Op::Const { value, weak: true } => {
                if matches!(value, Scalar::Float(_)) && !dtype.is_float() {
                    self.diag.error(
                        n.span,
                        format!("the float literal `{value}` cannot take the dtype {dtype} of the other operand; write an integer or `cast` the tensor"),
                    );
                    return self.poisoned(span);
                }
                if dtype == DType::Bool {
                    self.diag.error(
                        n.span,
                        format!("the literal `{value}` is a number but the other operand is bool"),
                    );
                    return self.poisoned(span);
                }
                if let Some(range) = out_of_range(value, dtype) {
                    self.diag.error(
                        n.span,
                        format!("the constant `{value}` is out of range for {dtype}, the dtype it takes here ({range})"),
                    );
                    return self.poisoned(span);
                }
                self.push(
                    Op::Const {
                        value: value.convert(dtype),
                        weak: false,
                    },
                    vec![],
                    dtype,
                    vec![],
                    n.span,
                )
            }
            Op::Host { ref expr } => {
                if n.dtype == DType::Bool && dtype != DType::Bool
                    || n.dtype != DType::Bool && dtype == DType::Bool
                {
                    self.diag.error(
                        n.span,
                        format!(
                            "the host value is {} but the other operand is {dtype}",
                            n.dtype
                        ),
                    );
                    return self.poisoned(span);
                }
                if n.dtype.is_float() && !dtype.is_float() {
                    self.diag.error(n.span, format!("the host value is a float ({}) but the other operand is {dtype}; use an integer host value", n.dtype));
                    return self.poisoned(span);
                }
                let id = self.push(
                    Op::Host { expr: expr.clone() },
                    vec![],
                    dtype,
                    vec![],
                    n.span,
                );
                self.graph.node_mut(id).name = n.name.clone();
                id
            }
            _ => id,
        }
    }

    /// Whether weak constant `id` does not fit `dtype`.
    fn weak_out_of_range(&self, id: NodeId, dtype: DType) -> bool {
        match self.graph.node(id).op {
            Op::Const { value, weak: true } => out_of_range(value, dtype).is_some(),
            _ => false,
        }
    }

    /// A weak node with its default dtype (i32 / f32), other nodes unchanged.
    fn concrete(&mut self, id: NodeId) -> NodeId {
        match self.graph.node(id).op {
            Op::Const { value, weak: true } => {
                let dt = match value {
                    Scalar::Float(_) => DType::F32,
                    Scalar::Int(_) => DType::I32,
                    Scalar::Bool(_) => DType::Bool,
                };
                let span = self.graph.node(id).span;
                self.retype(id, dt, span)
            }
            _ => id,
        }
    }

    fn resolve_weak_to(&mut self, id: NodeId, dtype: DType, span: Span) -> NodeId {
        if self.is_weak(id) && !matches!(self.graph.node(id).op, Op::Host { .. }) {
            self.retype(id, dtype, span)
        } else {
            id
        }
    }

    /// Gives two operands one dtype where one of them is weak.
    fn coerce(&mut self, a: NodeId, b: NodeId, span: Span) -> (NodeId, NodeId) {
        let (wa, wb) = (self.is_weak(a), self.is_weak(b));
        let (da, db) = (self.graph.node(a).dtype, self.graph.node(b).dtype);
        // A weak operand out of range is retyped even to its own default dtype: `retype` is
        // where the range is reported (`x + 3000000000` with `x: i32`).
        match (wa, wb) {
            (true, false) if da != db || self.weak_out_of_range(a, db) => {
                (self.retype(a, db, span), b)
            }
            (false, true) if da != db || self.weak_out_of_range(b, da) => {
                (a, self.retype(b, da, span))
            }
            (true, true) if da != db => {
                let dt = if da.is_float() { da } else { db };
                (self.retype(a, dt, span), self.retype(b, dt, span))
            }
            _ => (a, b),
        }
    }

    // ----- statements and blocks -----------------------------------------------------------

    fn lower_block(&mut self, block: &syn::Block) -> Value {
        self.scopes.push(HashMap::new());
        let v = self.lower_block_inner(block);
        self.scopes.pop();
        v
    }

    fn lower_block_inner(&mut self, block: &syn::Block) -> Value {
        let mut last = Value::Unit;
        let n = block.stmts.len();
        for (i, stmt) in block.stmts.iter().enumerate() {
            last = Value::Unit;
            match stmt {
                Stmt::Local(local) => self.lower_let(local),
                Stmt::Expr(e, semi) => {
                    let v = self.lower_stmt_expr(e);
                    if semi.is_none() && i + 1 == n {
                        last = v;
                    }
                }
                Stmt::Item(item) => self.lower_item(item),
                Stmt::Macro(m) => self.diag.error(
                    m.span(),
                    "macros are not supported in a `#[graph]` body (the graph runs without Rust side effects); use `assert_*` ops for checks",
                ),
            }
        }
        last
    }

    fn lower_item(&mut self, item: &syn::Item) {
        if let syn::Item::Const(c) = item {
            let (lit, negative) = match unwrapped(&c.expr) {
                Expr::Lit(l) => (Some(&l.lit), false),
                Expr::Unary(u) if matches!(u.op, UnOp::Neg(_)) => match unwrapped(&u.expr) {
                    Expr::Lit(l) => (Some(&l.lit), true),
                    _ => (None, false),
                },
                _ => (None, false),
            };
            if let Some(lit) = lit {
                let v = match lit {
                    Lit::Int(i) => i
                        .base10_parse::<u64>()
                        .ok()
                        .map(i128::from)
                        .map(|m| if negative { -m } else { m })
                        .and_then(|v| i64::try_from(v).ok())
                        .map(Scalar::Int),
                    Lit::Float(f) => f
                        .base10_parse::<f64>()
                        .ok()
                        .filter(|v| v.is_finite())
                        .map(|v| Scalar::Float(if negative { -v } else { v })),
                    Lit::Bool(b) if !negative => Some(Scalar::Bool(b.value)),
                    _ => None,
                };
                if let Some(v) = v {
                    self.consts.insert(c.ident.to_string(), v);
                    return;
                }
            }
            self.diag.error(
                c.expr.span(),
                "a `const` in a `#[graph]` body must be a literal",
            );
            return;
        }
        self.diag.error(
            item.span(),
            "items other than `const NAME: T = literal;` are not supported in a `#[graph]` body",
        );
    }

    fn lower_let(&mut self, local: &syn::Local) {
        let Some(init) = &local.init else {
            self.diag.error(local.span(), "`let` without a value is not supported in a `#[graph]` body: write `let mut y = ...;` and reassign it");
            return;
        };
        if let Some((_, d)) = &init.diverge {
            self.diag.error(
                d.span(),
                "`let ... else` is not supported in a `#[graph]` body",
            );
        }
        let mut value = self.lower_expr(&init.expr);
        let (pat, ty) = match &local.pat {
            Pat::Type(pt) => (&*pt.pat, Some(&*pt.ty)),
            p => (p, None),
        };
        if let Some(ty) = ty {
            value = self.check_annotation(value, ty, init.expr.span());
        }
        self.bind_pattern(pat, value);
    }

    /// `let y: Tensor<f32, B, 10> = ...` checks the inferred type against the annotation.
    fn check_annotation(&mut self, value: Value, ty: &syn::Type, span: Span) -> Value {
        let Some((dtype, shape)) =
            crate::signature::parse_tensor_type(ty, self.diag, "a `let` annotation")
        else {
            return value;
        };
        let Some(id) = self.tensor_of(&value, span, "an annotated `let`") else {
            return value;
        };
        let shape: Shape = shape.iter().map(|d| self.subst_dim(d)).collect();
        let id = self.resolve_weak_to(id, dtype, span);
        let n = self.graph.node(id);
        if !n.poisoned && (n.dtype != dtype || n.shape != shape) {
            let msg = format!(
                "the value is {} but the `let` declares {}",
                type_str(n.dtype, &n.shape),
                type_str(dtype, &shape)
            );
            self.diag.error(span, msg);
        }
        Value::Tensor(id)
    }

    fn bind_pattern(&mut self, pat: &Pat, value: Value) {
        match pat {
            Pat::Ident(pi) if pi.by_ref.is_none() && pi.subpat.is_none() => {
                let value = match value {
                    Value::Tensor(id) => Value::Tensor(self.concrete(id)),
                    v => v,
                };
                self.bind(&pi.ident.to_string(), value, pi.mutability.is_some());
            }
            Pat::Wild(_) => {}
            Pat::Tuple(pt) => match value {
                Value::Tuple(vs) if vs.len() == pt.elems.len() => {
                    for (p, v) in pt.elems.iter().zip(vs) {
                        self.bind_pattern(p, v);
                    }
                }
                // An error was reported where the value came from: bind every name, quietly.
                Value::Tensor(id) if self.graph.node(id).poisoned => {
                    for p in &pt.elems {
                        self.bind_pattern(p, Value::Tensor(id));
                    }
                }
                other => {
                    let found = match &other {
                        Value::Tuple(vs) => format!("a tuple of {}", vs.len()),
                        _ => "a single value".to_string(),
                    };
                    self.diag.error(
                        pt.span(),
                        format!(
                            "the tuple pattern has {} elements but the value is {found}",
                            pt.elems.len()
                        ),
                    );
                    let poisoned = Value::Tensor(self.poisoned(pt.span()));
                    for p in &pt.elems {
                        self.bind_pattern(p, poisoned.clone());
                    }
                }
            },
            Pat::Paren(p) => self.bind_pattern(&p.pat, value),
            other => self.diag.error(other.span(), "only names, `_` and tuples of names are supported in `let` patterns of a `#[graph]` body"),
        }
    }

    fn lower_stmt_expr(&mut self, e: &Expr) -> Value {
        match e {
            Expr::Assign(a) => {
                let value = self.lower_expr(&a.right);
                match &*a.left {
                    Expr::Path(p) if p.path.get_ident().is_some() => {
                        let name = p.path.get_ident().expect("checked").to_string();
                        let value = match value {
                            Value::Tensor(id) => Value::Tensor(self.concrete(id)),
                            v => v,
                        };
                        self.assign(&name, value, a.span());
                    }
                    other => self.diag.error(
                        other.span(),
                        "only a plain variable can be assigned in a `#[graph]` body (`y = ...`)",
                    ),
                }
                Value::Unit
            }
            Expr::ForLoop(f) => {
                self.lower_for(f);
                Value::Unit
            }
            other => self.lower_expr(other),
        }
    }

    fn lower_for(&mut self, f: &syn::ExprForLoop) {
        let var = match &*f.pat {
            Pat::Ident(pi) => Some(pi.ident.to_string()),
            Pat::Wild(_) => None,
            other => {
                self.diag
                    .error(other.span(), "a `for` loop variable must be a plain name");
                return;
            }
        };
        let range = match &*f.expr {
            Expr::Range(r) => r,
            other => {
                self.diag.error(other.span(), "only `for i in 0..N` over a literal or const range is supported (it is unrolled at compile time)");
                return;
            }
        };
        let bound = |lw: &mut Self, e: &Option<Box<Expr>>| -> Option<i64> {
            let e = e.as_ref()?;
            match lw.literal_int(e) {
                Some(v) => Some(v),
                None => {
                    lw.diag.error(e.span(), "a `for` bound must be an integer literal or a `const` declared in the body (the loop is unrolled at compile time)");
                    None
                }
            }
        };
        let start = if range.start.is_some() {
            bound(self, &range.start)
        } else {
            Some(0)
        };
        let end = bound(self, &range.end);
        let (Some(start), Some(end)) = (start, end) else {
            if range.end.is_none() {
                self.diag
                    .error(range.span(), "an unbounded `for` range cannot be unrolled");
            }
            return;
        };
        let closed = matches!(range.limits, syn::RangeLimits::Closed(_));
        // Counted in i128, so `..=i64::MAX` neither overflows nor loses its last value.
        let count = i128::from(end) - i128::from(start) + i128::from(closed);
        if count > 4096 {
            self.diag.error(range.span(), "a `for` loop in a `#[graph]` body is unrolled; more than 4096 iterations is not supported");
            return;
        }
        let values: Vec<i64> = if closed {
            (start..=end).collect()
        } else {
            (start..end).collect()
        };
        for i in values {
            self.scopes.push(HashMap::new());
            if let Some(var) = &var {
                let span = f.pat.span();
                let id = self.push(
                    Op::Const {
                        value: Scalar::Int(i),
                        weak: true,
                    },
                    vec![],
                    DType::I32,
                    vec![],
                    span,
                );
                self.bind(var, Value::Tensor(id), false);
                self.consts.insert(format!("\0loop:{var}"), Scalar::Int(i));
            }
            self.lower_block_inner(&f.body);
            self.scopes.pop();
        }
    }

    fn literal_int(&self, e: &Expr) -> Option<i64> {
        match e {
            Expr::Lit(l) => match &l.lit {
                Lit::Int(i) => i.base10_parse::<i64>().ok(),
                _ => None,
            },
            Expr::Unary(u) if matches!(u.op, UnOp::Neg(_)) => {
                self.literal_int(&u.expr).and_then(i64::checked_neg)
            }
            Expr::Paren(p) => self.literal_int(&p.expr),
            Expr::Group(g) => self.literal_int(&g.expr),
            Expr::Path(p) => match self.consts.get(&p.path.get_ident()?.to_string()) {
                Some(Scalar::Int(v)) => Some(*v),
                _ => None,
            },
            _ => None,
        }
    }

    // ----- expressions ---------------------------------------------------------------------

    fn tensor_of(&mut self, v: &Value, span: Span, what: &str) -> Option<NodeId> {
        match v {
            Value::Tensor(id) => Some(*id),
            Value::Host {
                dtype,
                node,
                tokens,
            } => {
                if let Some(n) = node {
                    return Some(*n);
                }
                let id = self.push(
                    Op::Host {
                        expr: tokens.to_string(),
                    },
                    vec![],
                    *dtype,
                    vec![],
                    span,
                );
                self.graph.node_mut(id).name = Some(tokens.to_string());
                Some(id)
            }
            Value::Tuple(_) => {
                self.diag
                    .error(span, format!("{what} must be a tensor, found a tuple"));
                None
            }
            Value::Unit => {
                self.diag.error(span, format!("{what} must be a tensor, found no value (an `assert_*` or an `if` without a value)"));
                None
            }
        }
    }

    fn operand(&mut self, e: &Expr) -> NodeId {
        let v = self.lower_expr(e);
        match self.tensor_of(&v, e.span(), "an operand") {
            Some(id) => id,
            None => self.poisoned(e.span()),
        }
    }

    fn lower_expr(&mut self, e: &Expr) -> Value {
        match e {
            Expr::Lit(l) => self.lower_lit(&l.lit),
            Expr::Path(p) => self.lower_path(p),
            Expr::Paren(p) => self.lower_expr(&p.expr),
            Expr::Group(g) => self.lower_expr(&g.expr),
            Expr::Block(b) if b.label.is_none() && b.unsafe_token_is_none() => {
                self.lower_block(&b.block)
            }
            Expr::Tuple(t) => Value::Tuple(t.elems.iter().map(|e| self.lower_expr(e)).collect()),
            Expr::Field(f) => {
                let base = self.lower_expr(&f.base);
                match (&f.member, base) {
                    (syn::Member::Unnamed(i), Value::Tuple(vs))
                        if (i.index as usize) < vs.len() =>
                    {
                        vs[i.index as usize].clone()
                    }
                    _ => {
                        self.diag
                            .error(f.span(), "field access is only supported on tuples (`t.0`)");
                        Value::Tensor(self.poisoned(f.span()))
                    }
                }
            }
            Expr::Binary(b) => self.lower_binary(b),
            Expr::Unary(u) => self.lower_unary(u),
            Expr::Call(c) => self.lower_call(c),
            Expr::Index(ix) => self.lower_index(ix),
            Expr::If(i) => self.lower_if(i),
            Expr::Assign(_) | Expr::ForLoop(_) => {
                self.diag.error(
                    e.span(),
                    "assignments and `for` loops are statements here; they have no value",
                );
                Value::Unit
            }
            other => {
                let what = match other {
                    Expr::MethodCall(m) => {
                        format!("method calls (`.{}()`) are not supported", m.method)
                    }
                    Expr::Loop(_) => "`loop` is not supported".into(),
                    Expr::While(_) => "`while` is not supported".into(),
                    Expr::Match(_) => "`match` is not supported".into(),
                    Expr::Return(_) => "early `return` is not supported".into(),
                    Expr::Closure(_) => "closures are not supported".into(),
                    Expr::Macro(_) => "macros are not supported".into(),
                    Expr::Reference(_) => "references are not supported".into(),
                    Expr::Break(_) | Expr::Continue(_) => {
                        "`break` and `continue` are not supported".into()
                    }
                    Expr::Try(_) => "the `?` operator is not supported".into(),
                    Expr::Array(_) => {
                        "array literals are only supported as shape or axis lists of an op".into()
                    }
                    _ => "this expression is not supported".into(),
                };
                self.diag.error(
                    other.span(),
                    format!(
                        "{what} in a `#[graph]` body; supported are `let`, `let mut` and reassignment, blocks, tuples, the operators `+ - * / %`, comparisons and `& | ^ !` on bools, the ops of grafo's docs/OPS.md called as functions (`exp(x)`, `matmul(a, b)`), `if` and `for i in 0..N`"
                    ),
                );
                Value::Tensor(self.poisoned(other.span()))
            }
        }
    }

    fn lower_lit(&mut self, lit: &Lit) -> Value {
        self.lower_signed_lit(lit, false, lit.span().into())
    }

    /// A literal, negated first when `negative` (`-2147483648i32` is in range, as in Rust);
    /// a suffixed literal out of its dtype's range is an error here, an unsuffixed one when
    /// it meets its dtype.
    fn lower_signed_lit(&mut self, lit: &Lit, negative: bool, span: Span) -> Value {
        let sign = if negative { "-" } else { "" };
        let (value, dtype, weak) = match lit {
            Lit::Int(i) => {
                let magnitude = i.base10_parse::<u64>().ok().map(i128::from);
                let signed = magnitude.map(|m| if negative { -m } else { m });
                let v = match signed.and_then(|v| i64::try_from(v).ok()) {
                    Some(v) => v,
                    None => {
                        self.diag.error(
                            span,
                            format!("the integer literal `{sign}{}` is out of range for i64, the widest integer dtype ({})", i.base10_digits(), range_text(DType::I64)),
                        );
                        return Value::Tensor(self.poisoned(span));
                    }
                };
                let suffixed = |dtype: DType| match out_of_range(Scalar::Int(v), dtype) {
                    Some(range) => Err(format!(
                        "the literal `{sign}{}` is out of range for {dtype} ({range})",
                        i.token()
                    )),
                    None => Ok(dtype),
                };
                let checked = match i.suffix() {
                    "i32" => suffixed(DType::I32),
                    _ => Ok(DType::I32),
                };
                if let Err(msg) = checked {
                    self.diag.error(span, msg);
                    return Value::Tensor(self.poisoned(span));
                }
                match i.suffix() {
                    "" => (Scalar::Int(v), DType::I32, true),
                    "i32" => (Scalar::Int(v), DType::I32, false),
                    "i64" => (Scalar::Int(v), DType::I64, false),
                    "f32" => (Scalar::Int(v).convert(DType::F32), DType::F32, false),
                    "f64" => (Scalar::Float(v as f64), DType::F64, false),
                    s => {
                        self.diag.error(
                            span,
                            format!(
                                "literal suffix `{s}` is not a tensor dtype (f32, f64, i32, i64)"
                            ),
                        );
                        (Scalar::Int(v), DType::I32, true)
                    }
                }
            }
            Lit::Float(f) => {
                let Ok(v) = f.base10_parse::<f64>() else {
                    self.diag.error(span, "this float literal cannot be read");
                    return Value::Tensor(self.poisoned(span));
                };
                let v = if negative { -v } else { v };
                if v.is_infinite() {
                    self.diag.error(
                        span,
                        format!(
                            "the literal `{sign}{}` is out of range for f64 ({})",
                            f.token(),
                            range_text(DType::F64)
                        ),
                    );
                    return Value::Tensor(self.poisoned(span));
                }
                if f.suffix() == "f32" && out_of_range(Scalar::Float(v), DType::F32).is_some() {
                    self.diag.error(
                        span,
                        format!(
                            "the literal `{sign}{}` is out of range for f32 ({})",
                            f.token(),
                            range_text(DType::F32)
                        ),
                    );
                    return Value::Tensor(self.poisoned(span));
                }
                match f.suffix() {
                    "" => (Scalar::Float(v), DType::F32, true),
                    "f32" => (Scalar::Float(v as f32 as f64), DType::F32, false),
                    "f64" => (Scalar::Float(v), DType::F64, false),
                    s => {
                        self.diag
                            .error(span, format!("literal suffix `{s}` is not a float dtype"));
                        (Scalar::Float(v), DType::F32, true)
                    }
                }
            }
            Lit::Bool(b) => (Scalar::Bool(b.value), DType::Bool, false),
            other => {
                self.diag.error(
                    other.span(),
                    "only number and bool literals are values in a `#[graph]` body",
                );
                return Value::Tensor(self.poisoned(span));
            }
        };
        Value::Tensor(self.push(Op::Const { value, weak }, vec![], dtype, vec![], span))
    }

    fn lower_path(&mut self, p: &syn::ExprPath) -> Value {
        let span = p.span();
        let Some(id) = p.path.get_ident() else {
            self.diag.error(
                span,
                "paths are not values in a `#[graph]` body; use a parameter or `let` name",
            );
            return Value::Tensor(self.poisoned(span));
        };
        let name = id.to_string();
        if let Some((_, b)) = self.lookup(&name) {
            return match &b.value {
                Value::Host { tokens, dtype, .. } => {
                    let (tokens, dtype) = (tokens.clone(), *dtype);
                    let param_node = self.push(
                        Op::Host {
                            expr: tokens.to_string(),
                        },
                        vec![],
                        dtype,
                        vec![],
                        span,
                    );
                    self.graph.node_mut(param_node).name = Some(name);
                    Value::Host {
                        tokens,
                        dtype,
                        node: Some(param_node),
                    }
                }
                v => v.clone(),
            };
        }
        if let Some(v) = self.consts.get(&name).copied() {
            let dtype = match v {
                Scalar::Float(_) => DType::F32,
                Scalar::Int(_) => DType::I32,
                Scalar::Bool(_) => DType::Bool,
            };
            let weak = !matches!(v, Scalar::Bool(_));
            return Value::Tensor(self.push(
                Op::Const { value: v, weak },
                vec![],
                dtype,
                vec![],
                span,
            ));
        }
        if self.symbols.contains(&name) {
            self.diag.error(span, format!("`{name}` is a symbolic dim; it is only usable in shapes (`reshape(x, [{name}, 784])`)"));
        } else {
            self.diag.error(span, format!("cannot find `{name}` in this `#[graph]` body: values are parameters, `let` bindings and `const` literals"));
        }
        Value::Tensor(self.poisoned(span))
    }

    fn lower_unary(&mut self, u: &syn::ExprUnary) -> Value {
        let span = u.span();
        match u.op {
            UnOp::Neg(_) => {
                if let Expr::Lit(l) = unwrapped(&u.expr) {
                    if matches!(l.lit, Lit::Int(_) | Lit::Float(_)) {
                        return self.lower_signed_lit(&l.lit, true, span);
                    }
                }
                let x = self.operand(&u.expr);
                if let Op::Const { value, weak } = self.graph.node(x).op {
                    let dt = self.graph.node(x).dtype;
                    let value = match value {
                        Scalar::Float(v) => Scalar::Float(-v),
                        // A weak integer stays exact until it meets its dtype; a typed one
                        // wraps in its dtype, as the runtime's `neg`.
                        Scalar::Int(v) if weak => Scalar::Int(v.wrapping_neg()),
                        Scalar::Int(v) => Scalar::Int(v.wrapping_neg()).convert(dt),
                        Scalar::Bool(_) => {
                            self.diag.error(span, "cannot negate a bool");
                            return Value::Tensor(self.poisoned(span));
                        }
                    };
                    return Value::Tensor(self.push(
                        Op::Const { value, weak },
                        vec![],
                        dt,
                        vec![],
                        span,
                    ));
                }
                let x = self.concrete(x);
                let n = self.graph.node(x);
                let r = infer::unary("neg", false, (n.dtype, &n.shape.clone()));
                Value::Tensor(self.typed(Op::Unary(UnaryOp::Neg), vec![x], r, span))
            }
            UnOp::Not(_) => {
                if let Some(tokens) = self.host_expr(&Expr::Unary(u.clone())) {
                    return Value::Host {
                        tokens,
                        dtype: DType::Bool,
                        node: None,
                    };
                }
                let x = self.operand(&u.expr);
                let x = self.concrete(x);
                let n = self.graph.node(x).clone();
                let r = infer::unary_of("!", OperandKind::Bool, (n.dtype, &n.shape));
                Value::Tensor(self.typed(Op::Unary(UnaryOp::LogicalNot), vec![x], r, span))
            }
            _ => {
                self.diag
                    .error(span, "dereference is not supported in a `#[graph]` body");
                Value::Tensor(self.poisoned(span))
            }
        }
    }

    fn lower_binary(&mut self, b: &syn::ExprBinary) -> Value {
        let span = b.span();
        if matches!(b.op, BinOp::And(_) | BinOp::Or(_)) {
            if let Some(tokens) = self.host_expr(&Expr::Binary(b.clone())) {
                return Value::Host {
                    tokens,
                    dtype: DType::Bool,
                    node: None,
                };
            }
            self.diag.error(span, "`&&` and `||` are only supported between host conditions; on tensors use `select` or `minimum`/`maximum` of casts");
            return Value::Tensor(self.poisoned(span));
        }
        let l = self.operand(&b.left);
        let r = self.operand(&b.right);
        let op = match b.op {
            BinOp::Add(_) => Ok(BinaryOp::Add),
            BinOp::Sub(_) => Ok(BinaryOp::Sub),
            BinOp::Mul(_) => Ok(BinaryOp::Mul),
            BinOp::Div(_) => Ok(BinaryOp::Div),
            BinOp::Rem(_) => Ok(BinaryOp::TruncateMod),
            BinOp::BitAnd(_) => Ok(BinaryOp::LogicalAnd),
            BinOp::BitOr(_) => Ok(BinaryOp::LogicalOr),
            BinOp::BitXor(_) => Ok(BinaryOp::LogicalXor),
            BinOp::Lt(_) => Err(CmpOp::Lt),
            BinOp::Le(_) => Err(CmpOp::Le),
            BinOp::Gt(_) => Err(CmpOp::Gt),
            BinOp::Ge(_) => Err(CmpOp::Ge),
            BinOp::Eq(_) => Err(CmpOp::Eq),
            BinOp::Ne(_) => Err(CmpOp::Ne),
            _ => {
                self.diag.error(span, "this operator is not supported in a `#[graph]` body; supported are `+ - * / %`, `& | ^` (bool) and `< <= > >= == !=`");
                return Value::Tensor(self.poisoned(span));
            }
        };
        // Messages name the operator the user wrote (`+`), not the op behind it (`add`).
        let symbol = b.op.to_token_stream().to_string();
        self.operator = Some(symbol);
        let id = match op {
            Ok(op) => self.binary(op, l, r, span),
            Err(cmp) => self.compare(cmp, l, r, span),
        };
        self.operator = None;
        Value::Tensor(id)
    }

    fn binary(&mut self, op: BinaryOp, l: NodeId, r: NodeId, span: Span) -> NodeId {
        if self.is_poisoned(&[l, r]) {
            return self.poisoned(span);
        }
        let (l, r) = self.coerce(l, r, span);
        // Two weak literals make a weak literal (JAX's rule), folded here so it stays weak.
        if let (
            Op::Const {
                value: a,
                weak: true,
            },
            Op::Const {
                value: b,
                weak: true,
            },
        ) = (&self.graph.node(l).op, &self.graph.node(r).op)
        {
            // Weak literals compute in the widest type of their kind (as JAX folds Python
            // scalars); the result is range-checked when it meets its partner's dtype.
            let dt = self.graph.node(l).dtype;
            let wide = if dt.is_float() {
                DType::F64
            } else {
                DType::I64
            };
            if let Some(msg) = crate::passes::fold::int_fold_error(op, *a, *b, wide) {
                self.diag.error(span, msg);
                return self.poisoned(span);
            }
            let folded = match (op, wide) {
                // A literal's power is its value (`pow(2.0, 0.5)` is √2 as f64), rounded when it
                // meets its partner; both the compiled and the eager path see this constant.
                (BinaryOp::Pow, DType::F64) => Some(Scalar::Float(a.as_f64().powf(b.as_f64()))),
                _ => crate::passes::fold::fold_binary(op, *a, *b, wide),
            };
            if let Some(v) = folded {
                return self.push(
                    Op::Const {
                        value: v,
                        weak: true,
                    },
                    vec![],
                    dt,
                    vec![],
                    span,
                );
            }
        }
        let (l, r) = if op.is_logical() {
            (self.concrete(l), self.concrete(r))
        } else {
            (l, r)
        };
        let (nl, nr) = (self.graph.node(l).clone(), self.graph.node(r).clone());
        let name = self
            .operator
            .clone()
            .unwrap_or_else(|| op.name().to_string());
        let res = if op.is_logical() {
            infer::logical(&name, (nl.dtype, &nl.shape), (nr.dtype, &nr.shape))
        } else {
            infer::arithmetic(&name, (nl.dtype, &nl.shape), (nr.dtype, &nr.shape))
        };
        if self.is_poisoned(&[l, r]) {
            return self.poisoned(span);
        }
        if let Ok((dt, _)) = &res {
            if dt.is_int() {
                self.integer_check(op, r, span);
            }
        }
        self.typed(Op::Binary(op), vec![l, r], res, span)
    }

    /// TensorFlow raises on an integer zero divisor and a negative integer exponent: an
    /// integer op that divides (or `pow`) is preceded by a check of its right operand, an
    /// effect that fails with the op's name and line (as the `assert_*` ops do).
    fn integer_check(&mut self, op: BinaryOp, operand: NodeId, span: Span) {
        let (kind, message) = match op {
            _ if op.divides() => (
                AssertKind::NonZeroDivisor(op.name()),
                "integer division by zero",
            ),
            BinaryOp::Pow => (
                AssertKind::NonNegativeExponent,
                "integers to negative integer powers are not allowed",
            ),
            _ => return,
        };
        let id = self.push(
            Op::Assert {
                kind,
                message: message.to_string(),
            },
            vec![operand],
            DType::Bool,
            vec![],
            span,
        );
        self.effects.push(id);
    }

    fn compare(&mut self, op: CmpOp, l: NodeId, r: NodeId, span: Span) -> NodeId {
        if self.is_poisoned(&[l, r]) {
            return self.poisoned(span);
        }
        let (l, r) = self.coerce(l, r, span);
        let (l, r) = (self.concrete(l), self.concrete(r));
        let (nl, nr) = (self.graph.node(l).clone(), self.graph.node(r).clone());
        let name = self
            .operator
            .clone()
            .unwrap_or_else(|| op.name().to_string());
        let res = infer::compare(&name, (nl.dtype, &nl.shape), (nr.dtype, &nr.shape));
        self.typed(Op::Compare(op), vec![l, r], res, span)
    }

    /// Tries to read `e` as a host-only expression (host parameters, consts, literals).
    fn host_expr(&self, e: &Expr) -> Option<TokenStream> {
        match e {
            Expr::Lit(l) => match &l.lit {
                Lit::Int(_) | Lit::Float(_) | Lit::Bool(_) => Some(quote!(#l)),
                _ => None,
            },
            Expr::Path(p) => {
                let id = p.path.get_ident()?;
                let name = id.to_string();
                match self.lookup(&name) {
                    Some((
                        _,
                        Binding {
                            value: Value::Host { tokens, .. },
                            ..
                        },
                    )) => Some(tokens.clone()),
                    Some(_) => None,
                    None => {
                        let v = self.consts.get(&name)?;
                        Some(match v {
                            Scalar::Float(f) => quote!(#f),
                            Scalar::Int(i) => quote!(#i),
                            Scalar::Bool(b) => quote!(#b),
                        })
                    }
                }
            }
            Expr::Paren(p) => self.host_expr(&p.expr).map(|t| quote!((#t))),
            Expr::Group(g) => self.host_expr(&g.expr).map(|t| quote!((#t))),
            Expr::Unary(u) => {
                let inner = self.host_expr(&u.expr)?;
                let op = &u.op;
                Some(quote!(#op #inner))
            }
            Expr::Binary(b) => {
                let (l, r) = (self.host_expr(&b.left)?, self.host_expr(&b.right)?);
                let op = &b.op;
                Some(quote!((#l #op #r)))
            }
            _ => None,
        }
    }

    fn host_literal_bool(&self, e: &Expr) -> Option<bool> {
        match e {
            Expr::Lit(l) => match &l.lit {
                Lit::Bool(b) => Some(b.value),
                _ => None,
            },
            Expr::Paren(p) => self.host_literal_bool(&p.expr),
            Expr::Group(g) => self.host_literal_bool(&g.expr),
            Expr::Path(p) => match self.consts.get(&p.path.get_ident()?.to_string()) {
                Some(Scalar::Bool(b)) => Some(*b),
                _ => None,
            },
            Expr::Unary(u) if matches!(u.op, UnOp::Not(_)) => {
                self.host_literal_bool(&u.expr).map(|b| !b)
            }
            _ => None,
        }
    }

    // ----- if / cond -----------------------------------------------------------------------

    fn lower_if(&mut self, i: &syn::ExprIf) -> Value {
        let span = i.span();
        // A literal condition is decided now; the dead arm is not even lowered.
        if let Some(b) = self.host_literal_bool(&i.cond) {
            return if b {
                self.lower_block(&i.then_branch)
            } else {
                match &i.else_branch {
                    Some((_, e)) => self.lower_expr(e),
                    None => Value::Unit,
                }
            };
        }
        let predicate = if let Some(tokens) = self.host_expr(&i.cond) {
            Predicate::Host(tokens)
        } else {
            let c = self.operand(&i.cond);
            let n = self.graph.node(c);
            if !n.poisoned && (n.dtype != DType::Bool || !n.shape.is_empty()) {
                let msg = format!(
                    "an `if` condition must be a rank-0 bool tensor (or a host `bool`), found {}; reduce it first, e.g. `reduce_max(x) > 0.0`",
                    type_str(n.dtype, &n.shape)
                );
                self.diag.error(i.cond.span(), msg);
            }
            Predicate::Tensor(c)
        };
        let cond_id = CondId(self.graph.conds.len());
        self.graph.conds.push(Cond {
            predicate,
            region: self.region,
            names: vec![],
            then_outputs: vec![],
            else_outputs: vec![],
            results: vec![],
            then_effects: vec![],
            else_effects: vec![],
            removed: false,
        });
        let snapshot = self.snapshot();
        let (then_val, then_assigned, then_vars, then_effects) =
            self.lower_arm(cond_id, true, |lw| lw.lower_block(&i.then_branch));
        self.restore(&snapshot);
        let (else_val, else_assigned, else_vars, else_effects) = match &i.else_branch {
            Some((_, e)) => self.lower_arm(cond_id, false, |lw| lw.lower_expr(e)),
            None => self.lower_arm(cond_id, false, |_| Value::Unit),
        };
        self.restore(&snapshot);

        // AutoGraph's rule: every outer variable assigned in either arm is an output.
        let mut names: Vec<String> = then_assigned.clone();
        for n in else_assigned {
            if !names.contains(&n) {
                names.push(n);
            }
        }
        let mut then_outs = Vec::new();
        let mut else_outs = Vec::new();
        let mut out_names = Vec::new();
        for name in &names {
            let outer = snapshot
                .iter()
                .find(|(n, _)| n == name)
                .map(|(_, v)| v.clone());
            let tv = then_vars
                .iter()
                .find(|(n, _)| n == name)
                .map(|(_, v)| v.clone())
                .or_else(|| outer.clone());
            let ev = else_vars
                .iter()
                .find(|(n, _)| n == name)
                .map(|(_, v)| v.clone())
                .or(outer);
            match (tv, ev) {
                (Some(Value::Tensor(t)), Some(Value::Tensor(e))) => {
                    then_outs.push(t);
                    else_outs.push(e);
                    out_names.push(name.clone());
                }
                _ => self.diag.error(span, format!("`{name}` is assigned in an `if` on a tensor but is not a tensor in both arms")),
            }
        }
        let mut value_error = false;
        let value_count = match (&then_val, &else_val) {
            (Value::Unit, Value::Unit) => 0,
            (Value::Tensor(t), Value::Tensor(e)) => {
                then_outs.push(*t);
                else_outs.push(*e);
                out_names.push(String::new());
                1
            }
            (Value::Tuple(ts), Value::Tuple(es)) if ts.len() == es.len() => {
                let mut k = 0;
                for (t, e) in ts.iter().zip(es) {
                    if let (Value::Tensor(t), Value::Tensor(e)) = (t, e) {
                        then_outs.push(*t);
                        else_outs.push(*e);
                        out_names.push(String::new());
                        k += 1;
                    }
                }
                k
            }
            (Value::Tensor(_), Value::Unit) if i.else_branch.is_none() => {
                self.diag.error(span, "an `if` used as a value needs an `else` arm with a value of the same dtype and shape");
                value_error = true;
                0
            }
            _ => {
                self.diag.error(span, "the two arms of this `if` give different kinds of values (a tensor, a tuple or nothing)");
                value_error = true;
                0
            }
        };
        // Both arms must agree on dtype and shape of every output.
        let mut results = Vec::new();
        for k in 0..then_outs.len() {
            let (t, e) = (then_outs[k], else_outs[k]);
            let (t, e) = self.coerce(t, e, span);
            let (t, e) = (self.concrete(t), self.concrete(e));
            then_outs[k] = t;
            else_outs[k] = e;
            let (nt, ne) = (self.graph.node(t).clone(), self.graph.node(e).clone());
            let mut poisoned = nt.poisoned || ne.poisoned;
            if !poisoned && (nt.dtype != ne.dtype || nt.shape != ne.shape) {
                // The cond's result has no one type: later checks on it would only repeat this.
                poisoned = true;
                let what = if out_names[k].is_empty() {
                    "the value".to_string()
                } else {
                    format!("`{}`", out_names[k])
                };
                self.diag.error(
                    span,
                    format!(
                        "the arms of this `if` disagree on {what}: the `if` arm gives {}, the `else` arm gives {}",
                        type_str(nt.dtype, &nt.shape),
                        type_str(ne.dtype, &ne.shape)
                    ),
                );
            }
            let id = self.push(
                Op::CondOut {
                    cond: cond_id,
                    index: k,
                },
                vec![t, e],
                nt.dtype,
                nt.shape.clone(),
                span,
            );
            self.graph.node_mut(id).poisoned = poisoned;
            results.push(id);
        }
        {
            let c = &mut self.graph.conds[cond_id.0];
            c.names = out_names.clone();
            c.then_outputs = then_outs;
            c.else_outputs = else_outs;
            c.results = results.clone();
            c.then_effects = then_effects;
            c.else_effects = else_effects;
        }
        if let Predicate::Tensor(p) = &self.graph.conds[cond_id.0].predicate {
            let p = *p;
            for &r in &results {
                self.graph.node_mut(r).inputs.push(p);
            }
        }
        for (k, name) in names.iter().enumerate() {
            if k < results.len() && out_names[k] == *name {
                self.assign(name, Value::Tensor(results[k]), span);
            }
        }
        let vals: Vec<Value> = results[results.len() - value_count..]
            .iter()
            .map(|&r| Value::Tensor(r))
            .collect();
        if value_error {
            return Value::Tensor(self.poisoned(span));
        }
        match (value_count, &then_val) {
            (0, _) => Value::Unit,
            (_, Value::Tensor(_)) => vals.into_iter().next().unwrap_or(Value::Unit),
            _ => Value::Tuple(vals),
        }
    }

    /// The current values of all variables (to restore between arms).
    fn snapshot(&self) -> Vec<(String, Value)> {
        let mut out = Vec::new();
        for scope in &self.scopes {
            for (k, b) in scope {
                out.retain(|(n, _): &(String, Value)| n != k);
                out.push((k.clone(), b.value.clone()));
            }
        }
        out
    }

    fn restore(&mut self, snap: &[(String, Value)]) {
        for scope in self.scopes.iter_mut() {
            for (k, b) in scope.iter_mut() {
                if let Some((_, v)) = snap.iter().find(|(n, _)| n == k) {
                    b.value = v.clone();
                }
            }
        }
    }

    /// Lowers one arm in its region; returns its value, the outer names it assigned with their final values, and its effects.
    #[allow(clippy::type_complexity)]
    fn lower_arm(
        &mut self,
        cond: CondId,
        then_arm: bool,
        f: impl FnOnce(&mut Self) -> Value,
    ) -> (Value, Vec<String>, Vec<(String, Value)>, Vec<NodeId>) {
        let saved_region = std::mem::replace(&mut self.region, Region::Arm { cond, then_arm });
        let saved_effects = std::mem::take(&mut self.effects);
        self.arms.push(ArmFrame {
            base_depth: self.scopes.len(),
            assigned: vec![],
        });
        let v = f(self);
        let frame = self.arms.pop().expect("pushed above");
        let vars: Vec<(String, Value)> = frame
            .assigned
            .iter()
            .filter_map(|n| self.lookup(n).map(|(_, b)| (n.clone(), b.value.clone())))
            .collect();
        let effects = std::mem::replace(&mut self.effects, saved_effects);
        self.region = saved_region;
        (v, frame.assigned, vars, effects)
    }

    // ----- op calls ------------------------------------------------------------------------

    fn lower_call(&mut self, c: &syn::ExprCall) -> Value {
        let span = c.span();
        let (name, turbofish) = match &*c.func {
            Expr::Path(p) if p.path.segments.len() == 1 => {
                let seg = &p.path.segments[0];
                let tf = match &seg.arguments {
                    syn::PathArguments::AngleBracketed(a) => match a.args.first() {
                        Some(syn::GenericArgument::Type(syn::Type::Path(tp))) => {
                            tp.path.get_ident().map(|i| (i.to_string(), tp.span()))
                        }
                        _ => None,
                    },
                    _ => None,
                };
                (seg.ident.to_string(), tf)
            }
            other => {
                self.diag.error(other.span(), "only the ops of grafo's docs/OPS.md, called by their plain name, are supported (`exp(x)`, not a path)");
                return Value::Tensor(self.poisoned(span));
            }
        };
        if self.callees.callee(&name).is_some() {
            return self.lower_inline_call(&name, c);
        }
        let Some(row) = ops::lookup(&name) else {
            self.diag
                .error(c.func.span(), ops::unknown_op_message(&name));
            return Value::Tensor(self.poisoned(span));
        };
        let args: Vec<&Expr> = c.args.iter().collect();
        let checked = self.check_call(row, &args, turbofish.as_ref(), span);
        let Some(dtype) = checked else {
            // The operands' own mistakes are reported too, then the call is poisoned.
            for (a, spec) in args.iter().zip(row.args) {
                if matches!(spec.kind, Kind::Tensor | Kind::Scalar) {
                    self.operand(a);
                }
            }
            return match row.family {
                ops::Family::Check => Value::Unit,
                _ => Value::Tensor(self.poisoned(span)),
            };
        };
        let call = Call {
            name: row.name,
            args: &args,
            span,
            dtype,
            turbofish: turbofish.as_ref(),
        };
        match row.lowering {
            Lowering::Constant | Lowering::Zeros | Lowering::Ones | Lowering::Fill => {
                Value::Tensor(self.lower_creation(row.lowering, &call))
            }
            Lowering::Unary(u) => Value::Tensor(self.lower_unary_call(u, &call)),
            Lowering::Binary(op) => {
                let (a, b) = (self.operand(args[0]), self.operand(args[1]));
                Value::Tensor(self.binary(op, a, b, span))
            }
            Lowering::Select => Value::Tensor(self.lower_select(&call)),
            Lowering::Cast => Value::Tensor(self.lower_cast(&call)),
            Lowering::Gelu
            | Lowering::LeakyRelu
            | Lowering::ClipByValue
            | Lowering::BatchNormalization
            | Lowering::LayerNorm => Value::Tensor(self.lower_activation_call(row.lowering, &call)),
            Lowering::Reduce(kind) => Value::Tensor(self.lower_reduce(kind, &call)),
            Lowering::Norm => Value::Tensor(self.lower_norm(&call)),
            Lowering::MatMul => Value::Tensor(self.lower_matmul(&call)),
            Lowering::Transpose => Value::Tensor(self.lower_transpose(&call)),
            Lowering::Reshape => Value::Tensor(self.lower_reshape(&call)),
            Lowering::Conv2d { depthwise } => Value::Tensor(self.conv_general(depthwise, &call)),
            Lowering::BiasAdd => Value::Tensor(self.lower_bias_add(&call)),
            Lowering::Pool(kind) => Value::Tensor(self.pool_call(kind, &call)),
            Lowering::Softmax { log } => Value::Tensor(self.lower_softmax(log, &call)),
            Lowering::Selection(sel) => self.selection_call(sel, &call),
            Lowering::Assert(kind) => {
                self.lower_assert(kind, &call);
                Value::Unit
            }
        }
    }

    /// Checks a call against its row: the argument count, the syntactic kind of each argument
    /// and the turbofish dtype. Returns the dtype (if one was given), or `None` after
    /// reporting the mistake.
    fn check_call(
        &mut self,
        row: &OpRow,
        args: &[&Expr],
        turbofish: Option<&(String, Span)>,
        span: Span,
    ) -> Option<Option<DType>> {
        if !row.accepts(args.len()) {
            self.diag.error(span, row.arity_message(args.len()));
            return None;
        }
        let mut ok = true;
        for (a, spec) in args.iter().zip(row.args) {
            if !self.is_of_kind(spec.kind, a) {
                self.diag.error(a.span(), row.kind_message(spec));
                ok = false;
            }
        }
        let dtype = match (turbofish, row.type_param) {
            (None, TypeParam::Required) => {
                let msg = format!(
                    "`{}` needs its target dtype: `{}`, e.g. `{}`",
                    row.name,
                    row.call_form(),
                    row.example
                );
                self.diag.error(span, msg);
                return None;
            }
            (None, _) => None,
            (Some((_, tspan)), TypeParam::None) => {
                let msg = format!(
                    "`{}` takes no dtype parameter: `{}`",
                    row.name,
                    row.call_form()
                );
                self.diag.error(*tspan, msg);
                return None;
            }
            (Some((t, tspan)), _) => match DType::from_name(t) {
                Some(dt) => Some(dt),
                None => {
                    self.diag.error(
                        *tspan,
                        format!("unknown dtype `{t}`: one of f32, f64, i32, i64, bool"),
                    );
                    return None;
                }
            },
        };
        ok.then_some(dtype)
    }

    /// Whether `e` has the syntactic form of an argument of `kind` (the op's own rules, such
    /// as a positive stride or an axis in range, are checked by its lowering).
    fn is_of_kind(&self, kind: Kind, e: &Expr) -> bool {
        let e = unwrapped(e);
        let list = matches!(e, Expr::Array(_));
        match kind {
            Kind::Tensor | Kind::Scalar | Kind::Number | Kind::Mask => true,
            Kind::Tensors | Kind::Ints | Kind::Dims | Kind::Pads => list,
            Kind::Axis | Kind::Int => self.literal_int(e).is_some(),
            Kind::Axes | Kind::Window | Kind::Count => list || self.literal_int(e).is_some(),
            Kind::Bool => self.host_literal_bool(e).is_some(),
            Kind::Padding => padding_of(e).is_some(),
            Kind::Message => matches!(
                e,
                Expr::Lit(syn::ExprLit {
                    lit: Lit::Str(_),
                    ..
                })
            ),
        }
    }

    /// An axis or a list of axes: `1`, `-1`, `[0, 2]`.
    fn int_list(&mut self, e: &Expr) -> Option<Vec<i64>> {
        if let Some(v) = self.literal_int(e) {
            return Some(vec![v]);
        }
        if let Expr::Array(a) = unwrapped(e) {
            let mut out = Vec::new();
            for el in &a.elems {
                match self.literal_int(el) {
                    Some(v) => out.push(v),
                    None => {
                        self.diag
                            .error(el.span(), "an axis must be an integer literal");
                        return None;
                    }
                }
            }
            return Some(out);
        }
        self.diag.error(
            e.span(),
            "expected an integer literal axis or a list of them (`[0, 1]`)",
        );
        None
    }

    /// A shape list `[B, 784]`; `-1` (as `None`) only where `allow_infer`.
    fn dim_list(&mut self, e: &Expr, allow_infer: bool) -> Option<Vec<Option<Dim>>> {
        let Expr::Array(a) = unwrapped(e) else {
            self.diag
                .error(e.span(), "expected a shape list such as `[B, 784]`");
            return None;
        };
        let mut out = Vec::new();
        for el in &a.elems {
            if let Some(v) = self.literal_int(el) {
                if v == -1 && allow_infer {
                    out.push(None);
                } else if v >= 0 {
                    out.push(Some(Dim::Const(v as u64)));
                } else {
                    self.diag.error(
                        el.span(),
                        "a dim must be non-negative (or -1 in `reshape`, to infer it)",
                    );
                    return None;
                }
                continue;
            }
            match self.dim_product(el) {
                Ok(d) => out.push(Some(d)),
                Err(()) => return None,
            }
        }
        Some(out)
    }
}

/// A call being lowered, after [`Lowerer::check_call`] accepted its arguments.
struct Call<'c> {
    /// The op's name (its row's).
    name: &'static str,
    args: &'c [&'c Expr],
    span: Span,
    /// The turbofish dtype, where the row takes one and the call gave it.
    dtype: Option<DType>,
    turbofish: Option<&'c (String, Span)>,
}

/// `SAME` or `VALID` (or TF's strings `"SAME"` / `"VALID"`).
fn padding_of(e: &Expr) -> Option<Padding> {
    match unwrapped(e) {
        Expr::Path(p) if p.path.is_ident("SAME") => Some(Padding::Same),
        Expr::Path(p) if p.path.is_ident("VALID") => Some(Padding::Valid),
        Expr::Lit(syn::ExprLit {
            lit: Lit::Str(s), ..
        }) => match s.value().as_str() {
            "SAME" => Some(Padding::Same),
            "VALID" => Some(Padding::Valid),
            _ => None,
        },
        _ => None,
    }
}

/// Creation and elementwise calls.
impl Lowerer<'_> {
    /// `constant(v)`, `zeros([dims])`, `ones([dims])`, `fill([dims], v)`.
    fn lower_creation(&mut self, lowering: Lowering, call: &Call) -> NodeId {
        let (args, span) = (call.args, call.span);
        if lowering == Lowering::Constant {
            let v = self.operand(args[0]);
            if !matches!(self.graph.node(v).op, Op::Const { .. }) {
                self.diag.error(
                    args[0].span(),
                    "`constant` takes a scalar literal; a parameter is already a tensor",
                );
                return self.poisoned(span);
            }
            let v = match call.dtype {
                Some(dt) => self.resolve_weak_to(v, dt, span),
                None => self.concrete(v),
            };
            self.graph.node_mut(v).span = span;
            return v;
        }
        let Some(dims) = self.dim_list(args[0], false) else {
            return self.poisoned(span);
        };
        let shape: Shape = dims.into_iter().flatten().collect();
        let value = if lowering == Lowering::Fill {
            let v = self.operand(args[1]);
            match call.dtype {
                Some(dt) => self.resolve_weak_to(v, dt, span),
                None => self.concrete(v),
            }
        } else {
            let dt = call.dtype.unwrap_or(DType::F32);
            let one = if lowering == Lowering::Ones { 1.0 } else { 0.0 };
            self.push(
                Op::Const {
                    value: Scalar::Float(one).convert(dt),
                    weak: false,
                },
                vec![],
                dt,
                vec![],
                span,
            )
        };
        if !self.graph.node(value).shape.is_empty() && !self.graph.node(value).poisoned {
            self.diag.error(span, "`fill` takes a scalar value");
            return self.poisoned(span);
        }
        let dt = self.graph.node(value).dtype;
        self.typed(Op::Fill, vec![value], Ok((dt, shape)), span)
    }

    /// A unary op of the table (`exp(x)`).
    fn lower_unary_call(&mut self, u: UnaryOp, call: &Call) -> NodeId {
        let x = self.operand(call.args[0]);
        let x = self.concrete(x);
        let n = self.graph.node(x).clone();
        let r = infer::unary_of(u.name(), u.operand_kind(), (n.dtype, &n.shape));
        self.typed(Op::Unary(u), vec![x], r, call.span)
    }

    /// `select(cond, a, b)`.
    fn lower_select(&mut self, call: &Call) -> NodeId {
        let (args, span) = (call.args, call.span);
        let cnd = self.operand(args[0]);
        let (a, b) = (self.operand(args[1]), self.operand(args[2]));
        let (a, b) = self.coerce(a, b, span);
        let (a, b) = (self.concrete(a), self.concrete(b));
        let (nc, na, nb) = (
            self.graph.node(cnd).clone(),
            self.graph.node(a).clone(),
            self.graph.node(b).clone(),
        );
        let r = infer::select(
            (nc.dtype, &nc.shape),
            (na.dtype, &na.shape),
            (nb.dtype, &nb.shape),
        );
        self.typed(Op::Select, vec![cnd, a, b], r, span)
    }

    /// `cast::<T>(x)`; a weak literal becomes a constant of `T`.
    fn lower_cast(&mut self, call: &Call) -> NodeId {
        let span = call.span;
        let x = self.operand(call.args[0]);
        let dt = call.dtype.expect("the row requires the dtype");
        if self.is_weak(x) && !matches!(self.graph.node(x).op, Op::Host { .. }) {
            let Op::Const { value, .. } = self.graph.node(x).op else {
                unreachable!("weak nodes are constants")
            };
            return self.push(
                Op::Const {
                    value: value.convert(dt),
                    weak: false,
                },
                vec![],
                dt,
                vec![],
                span,
            );
        }
        let shape = self.graph.node(x).shape.clone();
        self.typed(Op::Cast, vec![x], Ok((dt, shape)), span)
    }
}

/// Reductions.
impl Lowerer<'_> {
    /// `reduce_sum(x [, axis or [axes] [, keep_dims]])` and its siblings.
    fn lower_reduce(&mut self, kind: ReduceKind, call: &Call) -> NodeId {
        let (args, span) = (call.args, call.span);
        let x = self.operand(args[0]);
        let x = self.concrete(x);
        let n = self.graph.node(x).clone();
        let axes_raw: Vec<i64> = match args.get(1) {
            None => (0..n.shape.len() as i64).collect(),
            Some(a) => match self.int_list(a) {
                Some(v) => v,
                None => return self.poisoned(span),
            },
        };
        // The row's kind check accepted only `true` or `false`.
        let keep = args
            .get(2)
            .and_then(|e| self.host_literal_bool(e))
            .unwrap_or(false);
        if n.poisoned {
            return self.poisoned(span);
        }
        let r = infer::normalize_axes(kind.name(), &axes_raw, n.shape.len(), &n.shape).and_then(
            |axes| infer::reduce(kind.name(), (n.dtype, &n.shape), &axes, keep).map(|t| (axes, t)),
        );
        let make = |axes| Op::Reduce {
            kind,
            axes,
            keep_dims: keep,
        };
        let error_span = args.get(1).map_or(span, |a| a.span());
        self.typed_with(vec![x], r, make, error_span, span)
    }

    /// `norm(x)`, the L2 norm over all axes.
    fn lower_norm(&mut self, call: &Call) -> NodeId {
        let x = self.operand(call.args[0]);
        let n = self.graph.node(x).clone();
        let r = infer::unary("norm", true, (n.dtype, &n.shape)).map(|(dt, _)| (dt, vec![]));
        self.typed(Op::Norm, vec![x], r, call.span)
    }
}

/// Linear algebra and shapes.
impl Lowerer<'_> {
    /// `matmul(a, b)`.
    fn lower_matmul(&mut self, call: &Call) -> NodeId {
        let (a, b) = (self.operand(call.args[0]), self.operand(call.args[1]));
        let (na, nb) = (self.graph.node(a).clone(), self.graph.node(b).clone());
        let r = infer::matmul((na.dtype, &na.shape), (nb.dtype, &nb.shape));
        self.typed(
            Op::MatMul {
                transpose_a: false,
                transpose_b: false,
            },
            vec![a, b],
            r,
            call.span,
        )
    }

    /// `transpose(x [, [perm]])`, reversing the axes by default.
    fn lower_transpose(&mut self, call: &Call) -> NodeId {
        let (args, span) = (call.args, call.span);
        let x = self.operand(args[0]);
        let n = self.graph.node(x).clone();
        let perm: Vec<usize> = match args.get(1) {
            None => (0..n.shape.len()).rev().collect(),
            Some(a) => match self.int_list(a) {
                Some(v) => v
                    .iter()
                    .map(|&p| if p < 0 { usize::MAX } else { p as usize })
                    .collect(),
                None => return self.poisoned(span),
            },
        };
        let r = infer::transpose(&n.shape, &perm).map(|s| (n.dtype, s));
        self.typed(Op::Transpose { perm }, vec![x], r, span)
    }

    /// `reshape(x, [dims])`.
    fn lower_reshape(&mut self, call: &Call) -> NodeId {
        let x = self.operand(call.args[0]);
        let Some(target) = self.dim_list(call.args[1], true) else {
            return self.poisoned(call.span);
        };
        let n = self.graph.node(x).clone();
        let r = infer::reshape(&n.shape, &target).map(|s| (n.dtype, s));
        self.typed(Op::Reshape, vec![x], r, call.span)
    }
}

/// `bias_add` and the softmaxes.
impl Lowerer<'_> {
    /// `bias_add(x, b)`.
    fn lower_bias_add(&mut self, call: &Call) -> NodeId {
        let (x, b) = (self.operand(call.args[0]), self.operand(call.args[1]));
        let (nx, nb) = (self.graph.node(x).clone(), self.graph.node(b).clone());
        let r = infer::bias_add((nx.dtype, &nx.shape), (nb.dtype, &nb.shape));
        self.typed(Op::BiasAdd, vec![x, b], r, call.span)
    }

    /// `softmax(x [, axis])` and `log_softmax(x [, axis])`, over the last axis by default.
    fn lower_softmax(&mut self, log: bool, call: &Call) -> NodeId {
        let (args, span, name) = (call.args, call.span, call.name);
        let x = self.operand(args[0]);
        let n = self.graph.node(x).clone();
        // The row's kind check accepted only an integer literal.
        let axis = args.get(1).and_then(|a| self.literal_int(a)).unwrap_or(-1);
        if n.poisoned {
            return self.poisoned(span);
        }
        let r = infer::normalize_axes(name, &[axis], n.shape.len(), &n.shape)
            .and_then(|a| infer::unary(name, true, (n.dtype, &n.shape)).map(|t| (a[0], t)));
        let make = |axis| Op::Softmax { axis, log };
        let error_span = args.get(1).map_or(span, |a| a.span());
        self.typed_with(vec![x], r, make, error_span, span)
    }
}

/// The checks.
impl Lowerer<'_> {
    /// `assert_*(x [, y], "msg")`: a node of the region's effects, no value.
    fn lower_assert(&mut self, kind: AssertKind, call: &Call) {
        let (args, span) = (call.args, call.span);
        let binary = matches!(kind, AssertKind::Greater | AssertKind::Less);
        let message = match args.get(if binary { 2 } else { 1 }) {
            Some(e) => match unwrapped(e) {
                Expr::Lit(syn::ExprLit {
                    lit: Lit::Str(s), ..
                }) => s.value(),
                _ => unreachable!("the row's kind check accepted only a string literal"),
            },
            None => String::new(),
        };
        let mut inputs = vec![self.operand(args[0])];
        if binary {
            let b = self.operand(args[1]);
            let (a, b) = self.coerce(inputs[0], b, span);
            inputs = vec![self.concrete(a), self.concrete(b)];
        } else {
            inputs[0] = self.concrete(inputs[0]);
        }
        let ns: Vec<Node> = inputs.iter().map(|&i| self.graph.node(i).clone()).collect();
        let r = if binary {
            infer::compare(
                kind.name(),
                (ns[0].dtype, &ns[0].shape),
                (ns[1].dtype, &ns[1].shape),
            )
        } else {
            infer::unary(
                kind.name(),
                kind == AssertKind::AllFinite,
                (ns[0].dtype, &ns[0].shape),
            )
        };
        let id = self.typed(
            Op::Assert { kind, message },
            inputs,
            r.map(|_| (DType::Bool, vec![])),
            span,
        );
        if !self.graph.node(id).poisoned {
            self.effects.push(id);
        }
    }
}

impl Lowerer<'_> {
    /// One dim of a shape list other than a plain literal: a symbol of the signature (`B`),
    /// or a product of symbols and non-negative literals (`B * 4`, `(B * H) * 64`).
    /// Reports the error itself.
    fn dim_product(&mut self, e: &Expr) -> Result<Dim, ()> {
        match e {
            Expr::Paren(p) => self.dim_product(&p.expr),
            Expr::Group(g) => self.dim_product(&g.expr),
            Expr::Binary(b) if matches!(b.op, syn::BinOp::Mul(_)) => {
                let l = self.dim_product(&b.left)?;
                let r = self.dim_product(&b.right)?;
                match l.times(&r) {
                    Some(d) => Ok(d),
                    None => {
                        self.diag.error(
                            e.span(),
                            format!(
                                "the dim `{}` is larger than 64 bits can hold",
                                e.to_token_stream()
                            ),
                        );
                        Err(())
                    }
                }
            }
            Expr::Path(p)
                if p.path
                    .get_ident()
                    .is_some_and(|i| self.symbols.contains(&i.to_string())) =>
            {
                Ok(self.subst_dim(&Dim::Sym(
                    p.path
                        .get_ident()
                        .map(|i| i.to_string())
                        .unwrap_or_default(),
                )))
            }
            other => {
                if let Some(v) = self.literal_int(other) {
                    if v >= 0 {
                        return Ok(Dim::Const(v as u64));
                    }
                    self.diag.error(
                        other.span(),
                        "a factor of a dim must be non-negative (`-1` stands alone, to infer a dim of `reshape`)",
                    );
                    return Err(());
                }
                let found = other.to_token_stream().to_string();
                self.diag.error(
                    other.span(),
                    format!("a dim is an integer literal, a symbol of the signature (`B`) or a product of them (`B * 4`); `{found}` is none of these"),
                );
                Err(())
            }
        }
    }
}

trait UnsafeBlock {
    fn unsafe_token_is_none(&self) -> bool;
}

impl UnsafeBlock for syn::ExprBlock {
    fn unsafe_token_is_none(&self) -> bool {
        true
    }
}
