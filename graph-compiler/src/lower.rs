//! Phase 2, lower: turns the function body into graph nodes, resolving names, literals, `if` (cond nodes) and unrolled `for`.
//!
//! Each node is typed as it is created (the rules are in `infer.rs`), so a weak literal
//! takes its partner's dtype and every error points at the expression it came from.
//! A node whose operands could not be typed is poisoned: it is kept, but no further error
//! is reported about it, so one mistake gives one message.
//!
//! This file is the driver: the `Lowerer` state, blocks, `let` and bindings, expressions,
//! and the dispatch of a call through its row of the op table (`ops.rs`), which checks the
//! arguments before the family's lowering runs. The families live in `lower/`:
//! `elementwise.rs` (literals, operators, creation, unary/select/cast), `constant.rs` (scalar
//! and array constants), `activations.rs`
//! (gelu, leaky_relu and the composite normalisations), `reduce.rs`, `linalg.rs`, `nn.rs`
//! (convolution, pooling, bias_add, softmax), `selection.rs`, `checks.rs` (`assert_*`),
//! `control.rs` (`if` and `for`) and `inline.rs` (calls of other graph functions).

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
use syn::{Expr, Lit, Pat, Stmt, UnOp};

mod activations;
mod checks;
mod constant;
mod control;
mod elementwise;
mod inline;
pub use inline::{Callee, Callees};
mod linalg;
mod nn;
mod reduce;
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
        consts: callees.consts().clone(),
        operator: None,
        callees,
        dim_subst: HashMap::new(),
    };
    for (i, p) in params.iter().enumerate() {
        match p {
            Param::Tensor(t) => {
                // The symbols of plain dims and of product dims (`{B * 4}`) alike.
                for s in t.shape.iter().flat_map(|d| d.monomial().syms) {
                    if !lw.symbols.contains(&s) {
                        lw.symbols.push(s);
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

/// The value of `const NAME: T = literal;` (a number, possibly negated, or a bool), or
/// `None` when its value is not a literal.
pub fn const_literal(c: &syn::ItemConst) -> Option<Scalar> {
    let (lit, negative) = match unwrapped(&c.expr) {
        Expr::Lit(l) => (&l.lit, false),
        Expr::Unary(u) if matches!(u.op, UnOp::Neg(_)) => match unwrapped(&u.expr) {
            Expr::Lit(l) => (&l.lit, true),
            _ => return None,
        },
        _ => return None,
    };
    match lit {
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
    }
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
            if let Some(v) = const_literal(c) {
                self.consts.insert(c.ident.to_string(), v);
                return;
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
