//! The layers library in a body: `dense(p.fc, x)`, `conv2d(p.conv1, x, 1, SAME, relu)`, ...
//! lowered into the existing ops, so fusion, `gradients` and `NAME::eager` need nothing new.
//!
//! A layer function takes its layer first (a value of one of the library's parameter structs,
//! `structs/layers.rs`), then its inputs, then its options positionally in `tf.layers`' order,
//! each optional from the right. `dense`, `batch_norm`, `embedding`, `multi_head_attention`,
//! `lstm_cell` and `gru_cell` name nothing else; `conv2d`, `depthwise_conv2d` and `layer_norm`
//! are also ops, and are the layer when their first argument is a layer (a name or field path
//! holding one) or when written `layers::conv2d(..)`. This file holds the dispatch, the
//! arguments shared by the layers, and the feed-forward ones; `recurrent.rs` the attention and
//! the recurrent cells.

mod recurrent;

use super::context::{Binding, Value};
use super::{padding_of, unwrapped, Lowerer, Span};
use crate::ir::*;
use crate::structs::layers::{self as lib, Instance, LayerKind};
use std::collections::HashMap;
use syn::Expr;

/// The activations a layer's `activation` argument may name: Keras' `activation=` names that
/// grafo has as ops, and `linear` (none).
pub const ACTIVATIONS: &[&str] = &[
    "relu",
    "relu6",
    "elu",
    "gelu",
    "sigmoid",
    "tanh",
    "softplus",
    "softsign",
    "silu",
    "swish",
    "hard_sigmoid",
    "hard_swish",
    "leaky_relu",
    "exp",
    "softmax",
    "log_softmax",
    "linear",
];

/// The name a layer's intermediate value is bound to while an activation (or an op the layer
/// is written with) is lowered as a call; reserved, so no user's name meets it.
const BOUND: &str = "__grafo_layer_value";

/// A layer value's tensors by field name (a nested layer's by `query.kernel`).
pub(super) struct Fields(HashMap<String, NodeId>);

impl Fields {
    fn of(v: &Value) -> Fields {
        let mut leaves = Vec::new();
        super::structs::leaves_of(v, "", &mut leaves);
        Fields(
            leaves
                .into_iter()
                .filter_map(|(path, v)| match v {
                    Value::Tensor(id) => Some((path.trim_start_matches('.').to_string(), id)),
                    _ => None,
                })
                .collect(),
        )
    }

    pub(super) fn get(&self, name: &str) -> NodeId {
        self.0[name]
    }
}

/// A layer call being lowered: its kind, the layer's instance and tensors, the arguments.
pub(super) struct LayerCall<'c> {
    pub(super) kind: LayerKind,
    pub(super) inst: Instance,
    pub(super) fields: Fields,
    /// How the layer was written (`p.fc`), for messages.
    pub(super) layer_text: String,
    pub(super) args: &'c [&'c Expr],
    pub(super) span: Span,
}

impl LayerCall<'_> {
    fn name(&self) -> &'static str {
        self.kind.function()
    }

    /// "the layer `p.fc`, a `Dense<4, 3>`", for messages.
    pub(super) fn layer(&self) -> String {
        format!(
            "the layer `{}` is a `{}`",
            self.layer_text,
            lib::display(&lib::instance_ident(
                self.kind,
                &self.inst.dims,
                self.inst.dtype
            ))
        )
    }
}

impl Lowerer<'_> {
    /// Whether a call of `name` is a layer call: always for a name only the library has, and
    /// for `conv2d`, `depthwise_conv2d` and `layer_norm` when the first argument is a layer.
    pub(super) fn is_layer_call(&self, name: &str, args: &[&Expr]) -> bool {
        let Some(kind) = LayerKind::by_function(name) else {
            return false;
        };
        if crate::ops::lookup(name).is_none() {
            return true;
        }
        let layer = args.first().and_then(|a| self.peek(a));
        matches!(layer, Some(Value::Struct { ty, .. }) if lib::instance(&ty).is_some_and(|i| i.kind == kind))
    }

    /// The value an expression names without lowering it (no node, no error): a binding, a
    /// field of one, an element of an array at a literal, `const` or `for` index.
    fn peek(&self, e: &Expr) -> Option<Value> {
        match unwrapped(e) {
            Expr::Path(p) => Some(
                self.lookup(&p.path.get_ident()?.to_string())?
                    .1
                    .value
                    .clone(),
            ),
            Expr::Paren(p) => self.peek(&p.expr),
            Expr::Field(f) => match (self.peek(&f.base)?, &f.member) {
                (Value::Struct { fields, .. }, syn::Member::Named(n)) => {
                    fields.into_iter().find(|(m, _)| m == n).map(|(_, v)| v)
                }
                _ => None,
            },
            Expr::Index(ix) if !super::structs::is_slice(ix) => {
                let Value::Array(vs) = self.peek(&ix.expr)? else {
                    return None;
                };
                let i = match self.literal_int(&ix.index) {
                    Some(i) => i,
                    None => match self.peek(&ix.index)? {
                        Value::Tensor(id) => match self.graph.node(id).op {
                            Op::Const {
                                value: Scalar::Int(i),
                                ..
                            } => i,
                            _ => return None,
                        },
                        _ => return None,
                    },
                };
                vs.get(usize::try_from(i).ok()?).cloned()
            }
            _ => None,
        }
    }

    /// Lowers `name(layer, ...)`, a function of the layers library.
    pub(super) fn lower_layer_call(&mut self, name: &str, c: &syn::ExprCall) -> Value {
        let span: Span = c.span();
        let kind = LayerKind::by_function(name).expect("a layer function");
        let args: Vec<&Expr> = c.args.iter().collect();
        let (min, max) = kind.arity();
        if args.len() < min || args.len() > max {
            let msg = format!(
                "`{name}` takes {}: `{}`; found {} argument{}",
                kind.arguments(),
                kind.signature(),
                args.len(),
                if args.len() == 1 { "" } else { "s" }
            );
            self.diag.error(span, msg);
            return Value::Tensor(self.poisoned(span));
        }
        let layer = self.lower_expr(args[0]);
        let inst = match &layer {
            Value::Struct { ty, .. } => lib::instance(ty).filter(|i| i.kind == kind),
            Value::Tensor(id) if self.graph.node(*id).poisoned => {
                return Value::Tensor(self.poisoned(span))
            }
            _ => None,
        };
        let Some(inst) = inst else {
            let found = super::value_str(&layer, &self.graph);
            let msg = format!(
                "`{name}`'s first argument is its layer, a `{}` of grafo's layers library (a field of a parameter struct, `p.fc: {}`); found {found}{}",
                kind.form(),
                kind.form(),
                if crate::ops::lookup(name).is_some() {
                    format!(" (the op `{name}` takes a tensor first: see docs/OPS.md)")
                } else {
                    match kind {
                        LayerKind::Dense => " (without a layer, write `matmul(x, w) + b`)".to_string(),
                        LayerKind::Embedding => " (without a layer, write `gather(table, ids, 0)`)".to_string(),
                        _ => String::new(),
                    }
                }
            );
            self.diag.error(args[0].span(), msg);
            return Value::Tensor(self.poisoned(span));
        };
        let call = LayerCall {
            kind,
            inst,
            fields: Fields::of(&layer),
            layer_text: super::structs::expr_text(args[0]),
            args: &args,
            span,
        };
        let saved = self.operator.replace(name.to_string());
        let out = match kind {
            LayerKind::Dense => self.layer_dense(&call).map(Value::Tensor),
            LayerKind::Conv2d | LayerKind::DepthwiseConv2d => {
                self.layer_conv(&call).map(Value::Tensor)
            }
            LayerKind::BatchNorm | LayerKind::LayerNorm => {
                self.layer_norm_call(&call).map(Value::Tensor)
            }
            LayerKind::Embedding => self.layer_embedding(&call).map(Value::Tensor),
            LayerKind::MultiHeadAttention => self.layer_attention(&call).map(Value::Tensor),
            LayerKind::LstmCell => self.layer_lstm(&call),
            LayerKind::GruCell => self.layer_gru(&call).map(Value::Tensor),
        };
        self.operator = saved;
        out.unwrap_or_else(|| Value::Tensor(self.poisoned(span)))
    }

    /// The layer's input `args[k]`: a tensor of the layer's dtype whose rank is at least
    /// `min_rank` (exactly `rank` when given) and whose last axis is `last` (when given);
    /// `None` after reporting the mismatch at the argument.
    pub(super) fn layer_input(
        &mut self,
        call: &LayerCall,
        k: usize,
        what: &str,
        rank: std::ops::RangeInclusive<usize>,
        last: Option<(u64, &str)>,
    ) -> Option<NodeId> {
        let arg = call.args[k];
        let id = self.operand(arg);
        let id = self.resolve_weak_to(id, call.inst.dtype, arg.span());
        let n = self.graph.node(id).clone();
        if n.poisoned {
            return None;
        }
        let name = call.name();
        let ty = type_str(n.dtype, &n.shape);
        let problem = if n.dtype != call.inst.dtype {
            Some(format!(
                "`{name}`'s {what} is {ty} but {}, of {}: convert it with `cast::<{}>(...)`",
                call.layer(),
                call.inst.dtype,
                call.inst.dtype
            ))
        } else if !rank.contains(&n.shape.len()) {
            let ranks = if rank.start() == rank.end() {
                format!("rank {}", rank.start())
            } else if *rank.end() == usize::MAX {
                format!("rank {} or more", rank.start())
            } else {
                format!("rank {} to {}", rank.start(), rank.end())
            };
            Some(format!("`{name}`'s {what} must have {ranks}, found {ty}"))
        } else {
            match (last, n.shape.last()) {
                (Some((d, dim)), Some(found)) if *found != Dim::Const(d) => Some(format!(
                    "`{name}`'s {what} must have {d} on its last axis (`{dim}` of the layer: {}), found {ty}",
                    call.layer()
                )),
                _ => None,
            }
        };
        match problem {
            Some(msg) => {
                self.diag.error(arg.span(), msg);
                None
            }
            None => Some(id),
        }
    }

    /// Lowers `expr` with the names of `bound` holding the given tensors, in a scope of its
    /// own (how an activation, or an op a layer is written with, is applied to a node).
    pub(super) fn with_bound(&mut self, bound: &[(&str, NodeId)], expr: &Expr) -> Value {
        let scope = bound
            .iter()
            .map(|(n, id)| {
                let b = Binding {
                    value: Value::Tensor(*id),
                    mutable: false,
                    in_place: false,
                };
                (n.to_string(), b)
            })
            .collect();
        self.scopes.push(scope);
        let v = self.lower_expr(expr);
        self.scopes.pop();
        v
    }

    /// `activation(y)` for the layer's `activation` argument `args[k]` (none when absent):
    /// one of [`ACTIVATIONS`] or a function of the module, by name.
    pub(super) fn layer_activation(
        &mut self,
        call: &LayerCall,
        k: usize,
        y: NodeId,
    ) -> Option<NodeId> {
        let Some(arg) = call.args.get(k) else {
            return Some(y);
        };
        let name = match unwrapped(arg) {
            Expr::Path(p) => p.path.get_ident().map(|i| (i.clone(), i.to_string())),
            _ => None,
        };
        let known = |n: &str| ACTIVATIONS.contains(&n) || self.callees.callee(n).is_some();
        let Some((ident, name)) = name.filter(|(_, n)| known(n)) else {
            let found = quote::ToTokens::to_token_stream(arg).to_string();
            let msg = format!(
                "`{}`'s `activation` is the name of an activation, as Keras' `activation=` names it ({}, or `linear` for none), or of a function of this `#[graph] mod`; found `{found}`",
                call.name(),
                ACTIVATIONS
                    .iter()
                    .filter(|a| **a != "linear")
                    .map(|a| format!("`{a}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            );
            self.diag.error(arg.span(), msg);
            return None;
        };
        if name == "linear" {
            return Some(y);
        }
        let value = syn::Ident::new(BOUND, ident.span());
        let applied: Expr = syn::parse_quote!(#ident(#value));
        let v = self.with_bound(&[(BOUND, y)], &applied);
        let id = self.tensor_of(&v, arg.span(), "an activation's result")?;
        (!self.graph.node(id).poisoned).then_some(id)
    }

    /// `dense(layer, x [, activation])`: `activation(matmul(x, kernel) + bias)` over the last
    /// axis of `x` (`[.., IN]` to `[.., OUT]`), as Keras' `Dense`.
    fn layer_dense(&mut self, call: &LayerCall) -> Option<NodeId> {
        let span = call.span;
        let x = self.layer_input(
            call,
            1,
            "input",
            2..=usize::MAX,
            Some((call.inst.dims[0], "IN")),
        )?;
        let (kernel, bias) = (call.fields.get("kernel"), call.fields.get("bias"));
        let y = self.matmul_t(x, false, kernel, false, span);
        let y = self.bin(BinaryOp::Add, y, bias, span);
        self.layer_activation(call, 2, y)
    }

    /// A stride, `s` or `[s, s]` (grafo's convolutions take one stride for rows and columns).
    fn layer_stride(&mut self, call: &LayerCall, k: usize) -> Option<usize> {
        let Some(arg) = call.args.get(k) else {
            return Some(1);
        };
        let pair = self.window_pair(call.name(), "strides", arg)?;
        if pair[0] != pair[1] {
            let msg = format!(
                "`{}` takes one stride for rows and columns (as the op `conv2d`), found {pair:?}",
                call.name()
            );
            self.diag.error(arg.span(), msg);
            return None;
        }
        Some(pair[0])
    }

    /// `conv2d(layer, x [, strides [, padding [, activation [, dilation_rate]]]])` and
    /// `depthwise_conv2d(...)`: the op's convolution of `x` by the layer's kernel, plus its
    /// bias, then the activation; Keras' defaults, stride 1 and `VALID`.
    fn layer_conv(&mut self, call: &LayerCall) -> Option<NodeId> {
        let span = call.span;
        let depthwise = call.kind == LayerKind::DepthwiseConv2d;
        let x = self.layer_input(
            call,
            1,
            "input",
            4..=4,
            Some((call.inst.dims[2], if depthwise { "C" } else { "CIN" })),
        );
        let stride = self.layer_stride(call, 2);
        let padding = match call.args.get(3) {
            None => Some(Padding::Valid),
            Some(a) => {
                let p = padding_of(a);
                if p.is_none() {
                    let found = quote::ToTokens::to_token_stream(a).to_string();
                    let msg = format!(
                        "`{}`'s `padding` is `SAME` or `VALID` (Keras' `padding='same'` or `'valid'`); found `{found}`",
                        call.name()
                    );
                    self.diag.error(a.span(), msg);
                }
                p
            }
        };
        let dilation = match call.args.get(5) {
            None => Some([1, 1]),
            Some(a) => self.window_pair(call.name(), "dilation_rate", a),
        };
        let (x, stride, padding, dilation) = (x?, stride?, padding?, dilation?);
        let kernel = if depthwise {
            call.fields.get("depthwise_kernel")
        } else {
            call.fields.get("kernel")
        };
        let (nx, nk) = (self.graph.node(x).clone(), self.graph.node(kernel).clone());
        let (op, r) = if !depthwise && dilation == [1, 1] {
            let r = crate::infer::conv2d(
                (nx.dtype, &nx.shape),
                (nk.dtype, &nk.shape),
                stride,
                padding,
            );
            (Op::Conv2d { stride, padding }, r)
        } else {
            let r = crate::infer::conv_general(
                (nx.dtype, &nx.shape),
                (nk.dtype, &nk.shape),
                stride,
                dilation,
                padding,
                depthwise,
            );
            let op = Op::ConvGeneral {
                stride,
                dilation,
                padding,
                depthwise,
            };
            (op, r)
        };
        let error_span = call.args[1].span();
        let y = self.typed_with(
            vec![x, kernel],
            r.map(|t| ((), t)),
            |()| op,
            error_span,
            span,
        );
        if self.graph.node(y).poisoned {
            return None;
        }
        let y = self.bin(BinaryOp::Add, y, call.fields.get("bias"), span);
        self.layer_activation(call, 4, y)
    }

    /// `batch_norm(layer, x [, epsilon])` (inference, Keras' `BatchNormalization` with its
    /// moving statistics, default epsilon 1e-3) and `layer_norm(layer, x [, epsilon])`
    /// (Keras' `LayerNormalization`, default epsilon 1e-3): the ops `batch_normalization`
    /// and `layer_norm` over the last axis, with the layer's tensors.
    fn layer_norm_call(&mut self, call: &LayerCall) -> Option<NodeId> {
        let batch = call.kind == LayerKind::BatchNorm;
        let dim = if batch { "C" } else { "D" };
        let x = self.layer_input(
            call,
            1,
            "input",
            1..=usize::MAX,
            Some((call.inst.dims[0], dim)),
        )?;
        let eps: Expr = match call.args.get(2) {
            Some(e) => (*e).clone(),
            None => syn::parse_quote!(1e-3),
        };
        let f = |n: &str| call.fields.get(n);
        let (gamma, beta) = (f("gamma"), f("beta"));
        let v = if batch {
            let (mean, var) = (f("moving_mean"), f("moving_variance"));
            let e: Expr = syn::parse_quote!(batch_normalization(
                __grafo_layer_x,
                __grafo_layer_mean,
                __grafo_layer_variance,
                __grafo_layer_beta,
                __grafo_layer_gamma,
                #eps
            ));
            self.with_bound(
                &[
                    ("__grafo_layer_x", x),
                    ("__grafo_layer_mean", mean),
                    ("__grafo_layer_variance", var),
                    ("__grafo_layer_beta", beta),
                    ("__grafo_layer_gamma", gamma),
                ],
                &e,
            )
        } else {
            let e: Expr = syn::parse_quote!(layer_norm(
                __grafo_layer_x,
                __grafo_layer_gamma,
                __grafo_layer_beta,
                -1,
                #eps
            ));
            self.with_bound(
                &[
                    ("__grafo_layer_x", x),
                    ("__grafo_layer_gamma", gamma),
                    ("__grafo_layer_beta", beta),
                ],
                &e,
            )
        };
        let id = self.tensor_of(&v, call.span, "a normalisation's result")?;
        (!self.graph.node(id).poisoned).then_some(id)
    }

    /// `embedding(layer, ids)`: the rows of the layer's `embeddings` at integer `ids` of any
    /// shape (`[..] -> [.., D]`), `gather(embeddings, ids, 0)`; an id outside `0..V` fails the
    /// call with an `Err`, as `gather` does.
    fn layer_embedding(&mut self, call: &LayerCall) -> Option<NodeId> {
        let arg = call.args[1];
        let ids = self.operand(arg);
        let ids = self.concrete(ids);
        let n = self.graph.node(ids).clone();
        if n.poisoned {
            return None;
        }
        if !n.dtype.is_int() {
            let msg = format!(
                "`embedding`'s ids must be i32 or i64 (row indices of the layer's `embeddings`), found {}",
                type_str(n.dtype, &n.shape)
            );
            self.diag.error(arg.span(), msg);
            return None;
        }
        let table = call.fields.get("embeddings");
        let nt = self.graph.node(table).clone();
        let mut shape = n.shape.clone();
        shape.push(nt.shape[1].clone());
        let id = self.sel(
            SelOp::Gather { axis: 0 },
            vec![table, ids],
            nt.dtype,
            shape,
            call.span,
        );
        (!self.graph.node(id).poisoned).then_some(id)
    }
}

#[cfg(test)]
mod tests {
    use super::ACTIVATIONS;

    /// Every activation a layer accepts is an op of the table (or `linear`, none), so the
    /// call it is lowered as resolves.
    #[test]
    fn every_activation_is_an_op() {
        for a in ACTIVATIONS {
            assert!(
                *a == "linear" || crate::ops::lookup(a).is_some(),
                "`{a}` is no op"
            );
        }
    }
}
