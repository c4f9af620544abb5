//! Phase 2, lower: turns the function body into graph nodes, resolving names, literals, `if` (cond nodes) and unrolled `for`.
//!
//! Each node is typed as it is created (the rules are in `infer.rs`), so a weak literal
//! takes its partner's dtype and every error points at the expression it came from.
//! A node whose operands could not be typed is poisoned: it is kept, but no further error
//! is reported about it, so one mistake gives one message.
//!
//! This file is the entry: [`lower`] binds the parameters, lowers the body and checks its
//! results against the declared ones. The driver is split by concern: `context.rs` (the
//! `Lowerer` state, pushing typed nodes, bindings), `weak.rs` (weak literals and their
//! ranges), `stmt.rs` (blocks, items, `let`), `expr.rs` (expressions, names, host values),
//! `call.rs` (the dispatch of a call through its row of the op table, `ops.rs`, which checks
//! the arguments before the family's lowering runs) and `args.rs` (int, dim and padding
//! arguments). The families: `elementwise.rs` (literals, operators, creation,
//! unary/select/cast), `constant.rs` (scalar and array constants), `activations.rs` (gelu,
//! leaky_relu and the composite normalisations), `reduce.rs`, `linalg.rs`, `nn.rs`
//! (convolution, pooling, bias_add, softmax), `selection/`, `checks.rs` (`assert_*`),
//! `control.rs` (`if` and `for`), `inline.rs` (calls of other graph functions) and
//! `training.rs` (losses and optimizer updates). `autodiff/` is `gradients`: reverse-mode
//! differentiation of the graph lowered so far, with `build.rs`'s node builders.

use crate::diag::Diagnostics;
use crate::ir::*;
use crate::signature::{ResultTree, Signature};
use args::padding_of;
use call::Call;
use context::{ArmFrame, Binding, Lowerer, Value};
use expr::unwrapped;
use quote::quote;
use std::collections::HashMap;
use syn::{Expr, Lit, UnOp};
use weak::{out_of_range, range_text};
/// Lowering works with source ranges, so errors underline whole expressions.
type Span = SpanRange;

mod activations;
mod args;
mod autodiff;
mod build;
mod call;
mod checks;
mod constant;
mod context;
mod control;
mod elementwise;
mod expr;
mod inline;
mod layers;
pub use inline::{Callee, Callees};
mod linalg;
mod nn;
mod reduce;
mod selection;
mod stmt;
mod structs;
mod training;
pub use training::{Loss, Optimizer};
mod weak;
pub use selection::attrs as selection_attrs;

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
        stopped: Default::default(),
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
                lw.graph.node_mut(id).name = Some(t.label());
                // A struct parameter's leaf is reached through the struct's value, bound below.
                if t.field.is_some() {
                    continue;
                }
                lw.bind(
                    &t.name.to_string(),
                    Value::Tensor(id),
                    t.mutable || t.in_place,
                );
                if t.in_place {
                    lw.scopes[0]
                        .get_mut(&t.name.to_string())
                        .expect("bound above")
                        .in_place = true;
                }
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
    for sp in &sig.struct_params {
        let value = structs::tree_value(&sp.tree, &mut |i| {
            let id = lw
                .graph
                .nodes
                .iter()
                .position(|n| n.op == Op::Input { param: i })
                .expect("an input per leaf");
            Value::Tensor(NodeId(id))
        });
        lw.bind(&sp.name.to_string(), value, sp.mutable);
    }
    // The body's own scope: a `let w` there shadows parameter `w` without rebinding it, so
    // the parameters' scope holds each in-place parameter's final value at the end.
    lw.scopes.push(HashMap::new());
    let result = lw.lower_block_inner(body);
    lw.record_writebacks(params);
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
        // A body whose value is poisoned (a struct literal with errors) was reported.
        let declared_struct = matches!(
            sig.results,
            ResultTree::Struct { .. } | ResultTree::Array(_)
        );
        if declared_struct && matches!(result, Value::Tensor(id) if lw.graph.node(id).poisoned) {
            return Lowered { graph: lw.graph };
        }
        let msg = format!(
            "the function declares its results as {} but the body returns {}",
            tree_str(&sig.results, outputs),
            value_str(&result, &lw.graph)
        );
        lw.diag.error(ret_span, msg);
        return Lowered { graph: lw.graph };
    }
    let mut labels = vec![None; outputs.len()];
    result_labels(&sig.results, "", &mut labels);
    for (i, (v, decl)) in values.iter().zip(outputs).enumerate() {
        if let Some(id) = lw.tensor_of(v, ret_span, "a result") {
            {
                let id = lw.resolve_weak_to(id, decl.dtype, ret_span);
                let n = lw.graph.node(id);
                if !n.poisoned && (n.dtype != decl.dtype || n.shape != decl.shape) {
                    let what = if let Some(path) = &labels[i] {
                        format!("result field `{path}`")
                    } else if outputs.len() == 1 {
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

impl Lowerer<'_> {
    /// Records the new value of every in-place parameter the body reassigned (the value its
    /// binding in the parameters' scope, scope 0, holds now), checked against the declared
    /// dtype and shape. A parameter left as it was gets no writeback.
    fn record_writebacks(&mut self, params: &[Param]) {
        for (i, p) in params.iter().enumerate() {
            let Param::Tensor(t) = p else { continue };
            if !t.in_place {
                continue;
            }
            let name = t.name.to_string();
            let Some(value) = self.scopes[0].get(&name).map(|b| b.value.clone()) else {
                continue;
            };
            let input = self
                .graph
                .nodes
                .iter()
                .position(|n| n.op == Op::Input { param: i })
                .map(NodeId);
            if let Value::Tensor(id) = value {
                if Some(id) == input {
                    continue;
                }
            }
            let span = match &value {
                Value::Tensor(id) | Value::Host { node: Some(id), .. } => self.graph.node(*id).span,
                _ => t.span.into(),
            };
            let what = format!("the new value of in-place parameter `{name}`");
            let Some(id) = self.tensor_of(&value, span, &what) else {
                continue;
            };
            let id = self.resolve_weak_to(id, t.dtype, span);
            let id = self.concrete(id);
            let n = self.graph.node(id);
            if !n.poisoned && (n.dtype != t.dtype || n.shape != t.shape) {
                let msg = format!(
                    "{what} is {} but `{name}` is declared {}: the value assigned to an in-place parameter must keep its dtype and shape",
                    type_str(n.dtype, &n.shape),
                    type_str(t.dtype, &t.shape)
                );
                self.diag.error(span, msg);
                continue;
            }
            self.graph.writebacks.push((i, id));
        }
    }
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
        (
            ResultTree::Struct { ty, fields },
            Value::Struct {
                ty: vty,
                fields: vfields,
            },
        ) if ty == vty && fields.len() == vfields.len() => fields
            .iter()
            .zip(vfields)
            .all(|((_, t), (_, v))| flatten_results(v, t, out)),
        (ResultTree::Array(items), Value::Array(vs)) if items.len() == vs.len() => items
            .iter()
            .zip(vs)
            .all(|(t, v)| flatten_results(v, t, out)),
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
        ResultTree::Struct { ty, .. } => structs::a_struct(ty),
        ResultTree::Array(items) => {
            let parts: Vec<String> = items.iter().map(|t| tree_str(t, outputs)).collect();
            format!("[{}]", parts.join(", "))
        }
    }
}

/// The field path of each result leaf that sits in a struct (`hidden.w`, `blocks[1].wq`).
fn result_labels(tree: &ResultTree, prefix: &str, out: &mut [Option<String>]) {
    match tree {
        ResultTree::Leaf(i) if !prefix.is_empty() => out[*i] = Some(prefix.to_string()),
        ResultTree::Leaf(_) => {}
        ResultTree::Tuple(items) => {
            for t in items {
                result_labels(t, prefix, out);
            }
        }
        ResultTree::Struct { fields, .. } => {
            for (f, t) in fields {
                let p = if prefix.is_empty() {
                    f.to_string()
                } else {
                    format!("{prefix}.{f}")
                };
                result_labels(t, &p, out);
            }
        }
        ResultTree::Array(items) => {
            for (i, t) in items.iter().enumerate() {
                result_labels(t, &format!("{prefix}[{i}]"), out);
            }
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
        Value::Struct { ty, .. } => structs::a_struct(ty),
        Value::Array(vs) => {
            let parts: Vec<String> = vs.iter().map(|v| value_str(v, graph)).collect();
            format!("[{}]", parts.join(", "))
        }
    }
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
