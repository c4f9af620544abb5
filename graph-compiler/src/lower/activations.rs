//! Lowering of the activation and normalisation calls: `gelu`, `leaky_relu`, the Keras composites (`hard_sigmoid`, `hard_swish`, `silu`/`swish`, `softsign`), `clip_by_value`, `batch_normalization` and `layer_norm`.
//!
//! `gelu` and `leaky_relu` become one elementwise node each; `clip_by_value`,
//! `batch_normalization` and `layer_norm` are written in the existing ops (as TensorFlow
//! defines them), so fusion sees ordinary elementwise chains and reductions: `layer_norm`
//! over trailing axes is the same graph as the hand-written W4 and runs as one row pass.

use super::{Call, Lowerer, Span};
use crate::infer;
use crate::ir::*;
use crate::ops::{Activation, Lowering};
use syn::Expr;

/// Keras' default `epsilon` of `LayerNormalization`.
const LAYER_NORM_EPSILON: f64 = 1e-3;
/// TensorFlow's default `alpha` of `leaky_relu`.
const LEAKY_RELU_ALPHA: f64 = 0.2;

impl Lowerer<'_> {
    /// Lowers a call of this family; the row's check has accepted its arguments.
    pub(super) fn lower_activation_call(&mut self, lowering: Lowering, call: &Call) -> NodeId {
        let (args, span) = (call.args, call.span);
        let saved = self.operator.replace(call.name.to_string());
        let id = match lowering {
            Lowering::Gelu => self.gelu(args, span),
            Lowering::LeakyRelu => self.leaky_relu(args, span),
            Lowering::Activation(a) => self.composite_activation(call.name, a, args[0], span),
            Lowering::ClipByValue => self.clip_by_value(args, span),
            Lowering::BatchNormalization => self.batch_normalization(args, span),
            Lowering::LayerNorm => self.layer_norm(args, span),
            other => unreachable!("{other:?} is not an activation"),
        };
        self.operator = saved;
        id
    }

    /// A unary node over `x` (weak literals take their default dtype).
    fn unary_node(&mut self, u: UnaryOp, x: NodeId, span: Span) -> NodeId {
        let x = self.concrete(x);
        let n = self.graph.node(x).clone();
        let name = self
            .operator
            .clone()
            .unwrap_or_else(|| u.name().to_string());
        let r = infer::unary_of(&name, u.operand_kind(), (n.dtype, &n.shape));
        self.typed(Op::Unary(u), vec![x], r, span)
    }

    /// Fails (poisoning) unless `x` is a float tensor: the normalisations and activations need one.
    fn float_operand(&mut self, op: &str, x: NodeId, arg: &Expr) -> Option<NodeId> {
        let x = self.concrete(x);
        let n = self.graph.node(x).clone();
        if n.poisoned {
            return None;
        }
        match infer::unary_of(op, OperandKind::Float, (n.dtype, &n.shape)) {
            Ok(_) => Some(x),
            Err(msg) => {
                self.diag.error(arg.span(), msg);
                None
            }
        }
    }

    /// A weak float literal (it takes the dtype of the tensor it meets).
    fn weak_float(&mut self, v: f64, span: Span) -> NodeId {
        self.push(
            Op::Const {
                value: Scalar::Float(v),
                weak: true,
            },
            vec![],
            DType::F32,
            vec![],
            span,
        )
    }

    /// `gelu(x)` / `gelu(x, approximate)`.
    fn gelu(&mut self, args: &[&Expr], span: Span) -> NodeId {
        // The row's kind check accepted only `true` or `false`.
        let approximate = args
            .get(1)
            .and_then(|e| self.host_literal_bool(e))
            .unwrap_or(false);
        let x = self.operand(args[0]);
        let op = if approximate {
            UnaryOp::GeluTanh
        } else {
            UnaryOp::Gelu
        };
        self.unary_node(op, x, span)
    }

    /// `leaky_relu(x)` / `leaky_relu(x, alpha)` with a scalar `alpha`.
    fn leaky_relu(&mut self, args: &[&Expr], span: Span) -> NodeId {
        let x = self.operand(args[0]);
        let Some(x) = self.float_operand("leaky_relu", x, args[0]) else {
            return self.poisoned(span);
        };
        let alpha = match args.get(1) {
            Some(a) => {
                let id = self.operand(a);
                let n = self.graph.node(id);
                if !n.poisoned && !n.shape.is_empty() {
                    let msg = format!(
                        "`leaky_relu`'s `alpha` must be a scalar (TensorFlow's attribute), found {}",
                        type_str(n.dtype, &n.shape)
                    );
                    self.diag.error(a.span(), msg);
                    return self.poisoned(span);
                }
                id
            }
            None => self.weak_float(LEAKY_RELU_ALPHA, span),
        };
        self.binary(BinaryOp::LeakyRelu, x, alpha, span)
    }

    /// `hard_sigmoid`, `hard_swish`, `silu`/`swish` and `softsign` of a float `x`, written as
    /// Keras writes them, so fusion sees one elementwise chain and `gradients` needs no rule
    /// of their own.
    fn composite_activation(
        &mut self,
        name: &str,
        a: Activation,
        arg: &Expr,
        span: Span,
    ) -> NodeId {
        let x = self.operand(arg);
        let Some(x) = self.float_operand(name, x, arg) else {
            return self.poisoned(span);
        };
        match a {
            Activation::HardSigmoid | Activation::HardSwish => {
                // relu6(x + 3) / 6, times x for hard_swish (Keras: `x * relu6(x + 3) / 6`).
                let three = self.weak_float(3.0, span);
                let shifted = self.binary(BinaryOp::Add, x, three, span);
                let r = self.unary_node(UnaryOp::Relu6, shifted, span);
                let r = if a == Activation::HardSwish {
                    self.binary(BinaryOp::Mul, x, r, span)
                } else {
                    r
                };
                let six = self.weak_float(6.0, span);
                self.binary(BinaryOp::Div, r, six, span)
            }
            Activation::Silu => {
                let s = self.unary_node(UnaryOp::Sigmoid, x, span);
                self.binary(BinaryOp::Mul, x, s, span)
            }
            Activation::Softsign => {
                let m = self.unary_node(UnaryOp::Abs, x, span);
                let one = self.weak_float(1.0, span);
                let d = self.binary(BinaryOp::Add, one, m, span);
                self.binary(BinaryOp::Div, x, d, span)
            }
        }
    }

    /// Fails unless `p` broadcasts to exactly `x`'s shape (a bound or a parameter of `x`).
    fn broadcasts_to_x(&mut self, op: &str, what: &str, x: NodeId, p: NodeId, arg: &Expr) -> bool {
        let (nx, np) = (self.graph.node(x).clone(), self.graph.node(p).clone());
        if nx.poisoned || np.poisoned {
            return false;
        }
        match infer::broadcast(op, &nx.shape, &np.shape) {
            Ok(s) if s == nx.shape => true,
            _ => {
                let msg = format!(
                    "`{op}`'s {what} must broadcast to the shape of `x` {}, found {}",
                    shape_str(&nx.shape),
                    shape_str(&np.shape)
                );
                self.diag.error(arg.span(), msg);
                false
            }
        }
    }

    /// `clip_by_value(x, lo, hi)` = `maximum(minimum(x, hi), lo)` (TensorFlow's definition).
    fn clip_by_value(&mut self, args: &[&Expr], span: Span) -> NodeId {
        let x = self.operand(args[0]);
        let x = self.concrete(x);
        let (lo, hi) = (self.operand(args[1]), self.operand(args[2]));
        let ok_lo = self.broadcasts_to_x("clip_by_value", "lower bound", x, lo, args[1]);
        let ok_hi = self.broadcasts_to_x("clip_by_value", "upper bound", x, hi, args[2]);
        if !ok_lo || !ok_hi {
            return self.poisoned(span);
        }
        let upper = self.binary(BinaryOp::Minimum, x, hi, span);
        self.binary(BinaryOp::Maximum, upper, lo, span)
    }

    /// `batch_normalization(x, mean, variance, offset, scale, variance_epsilon)`, TensorFlow's
    /// inference form: `inv = rsqrt(variance + eps) * scale; x * inv + (offset - mean * inv)`.
    fn batch_normalization(&mut self, args: &[&Expr], span: Span) -> NodeId {
        let x = self.operand(args[0]);
        let Some(x) = self.float_operand("batch_normalization", x, args[0]) else {
            return self.poisoned(span);
        };
        let ops: Vec<NodeId> = args[1..].iter().map(|a| self.operand(a)).collect();
        if !self.batch_norm_operands(x, &ops, &args[1..]) {
            return self.poisoned(span);
        }
        let (mean, variance, offset, scale, eps) = (ops[0], ops[1], ops[2], ops[3], ops[4]);
        let v = self.binary(BinaryOp::Add, variance, eps, span);
        let inv = self.unary_node(UnaryOp::Rsqrt, v, span);
        let inv = self.binary(BinaryOp::Mul, inv, scale, span);
        let scaled = self.binary(BinaryOp::Mul, x, inv, span);
        let shift = self.binary(BinaryOp::Mul, mean, inv, span);
        let shift = self.binary(BinaryOp::Sub, offset, shift, span);
        self.binary(BinaryOp::Add, scaled, shift, span)
    }

    /// Checks `batch_normalization`'s operands after `x` one by one, so that an error names
    /// the argument and points at it (`variance` is f64, or does not broadcast) rather than
    /// at a product or sum of the lowered formula. Each has `x`'s dtype (a literal takes it)
    /// and broadcasts with `x` and the operands before it. Reports every bad operand.
    fn batch_norm_operands(&mut self, x: NodeId, ops: &[NodeId], args: &[&Expr]) -> bool {
        const NAMES: [&str; 5] = ["mean", "variance", "offset", "scale", "variance_epsilon"];
        let nx = self.graph.node(x).clone();
        let mut shape = nx.shape.clone();
        let mut ok = true;
        for ((&p, arg), name) in ops.iter().zip(args).zip(NAMES) {
            let np = self.graph.node(p).clone();
            if np.poisoned {
                ok = false;
                continue;
            }
            if np.dtype != nx.dtype && !self.is_weak(p) {
                let msg = format!(
                    "`batch_normalization`'s `{name}` is {} but `x` is {}: every operand has `x`'s dtype (convert with `cast::<{}>(...)`)",
                    type_str(np.dtype, &np.shape),
                    type_str(nx.dtype, &nx.shape),
                    nx.dtype
                );
                self.diag.error(arg.span(), msg);
                ok = false;
                continue;
            }
            match infer::broadcast("batch_normalization", &shape, &np.shape) {
                Ok(s) => shape = s,
                Err(_) => {
                    let before = if shape == nx.shape {
                        String::new()
                    } else {
                        format!(" (with the operands before it, {})", shape_str(&shape))
                    };
                    let msg = format!(
                        "`batch_normalization`'s `{name}` {} does not broadcast with `x` {}{before}",
                        shape_str(&np.shape),
                        shape_str(&nx.shape),
                    );
                    self.diag.error(arg.span(), msg);
                    ok = false;
                }
            }
        }
        ok
    }

    /// `reduce_mean(x, axes, keep_dims = true)`.
    fn mean_keep_dims(
        &mut self,
        x: NodeId,
        axes_raw: &[i64],
        span: Span,
        axes_span: Span,
    ) -> NodeId {
        let n = self.graph.node(x).clone();
        if n.poisoned {
            return self.poisoned(span);
        }
        let kind = ReduceKind::Mean;
        let r = infer::normalize_axes("layer_norm", axes_raw, n.shape.len(), &n.shape).and_then(
            |axes| infer::reduce("layer_norm", (n.dtype, &n.shape), &axes, true).map(|t| (axes, t)),
        );
        let make = |axes| Op::Reduce {
            kind,
            axes,
            keep_dims: true,
        };
        self.typed_with(vec![x], r, make, axes_span, span)
    }

    /// `layer_norm(x, gamma, beta, axis = -1, epsilon = 1e-3)` (Keras' `LayerNormalization`):
    /// the mean and variance over `axis` (kept), then `(x - mean) / sqrt(variance + epsilon) * gamma + beta`.
    fn layer_norm(&mut self, args: &[&Expr], span: Span) -> NodeId {
        let x = self.operand(args[0]);
        let Some(x) = self.float_operand("layer_norm", x, args[0]) else {
            return self.poisoned(span);
        };
        let (gamma, beta) = (self.operand(args[1]), self.operand(args[2]));
        let ok_g = self.broadcasts_to_x("layer_norm", "gamma", x, gamma, args[1]);
        let ok_b = self.broadcasts_to_x("layer_norm", "beta", x, beta, args[2]);
        if !ok_g || !ok_b {
            return self.poisoned(span);
        }
        let axes: Vec<i64> = match args.get(3) {
            None => vec![-1],
            Some(a) => match self.int_list(a) {
                Some(v) => v,
                None => return self.poisoned(span),
            },
        };
        let axes_span = args.get(3).map_or(span, |a| a.span());
        let eps = match args.get(4) {
            Some(e) => self.operand(e),
            None => self.weak_float(LAYER_NORM_EPSILON, span),
        };
        let mean = self.mean_keep_dims(x, &axes, span, axes_span);
        let d = self.binary(BinaryOp::Sub, x, mean, span);
        let sq = self.binary(BinaryOp::Mul, d, d, span);
        let var = self.mean_keep_dims(sq, &axes, span, axes_span);
        let v = self.binary(BinaryOp::Add, var, eps, span);
        let sd = self.unary_node(UnaryOp::Sqrt, v, span);
        let y = self.binary(BinaryOp::Div, d, sd, span);
        let y = self.binary(BinaryOp::Mul, y, gamma, span);
        self.binary(BinaryOp::Add, y, beta, span)
    }
}
