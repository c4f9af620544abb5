//! Lowering of the losses (`softmax_cross_entropy_with_logits` and its sparse form,
//! `sigmoid_cross_entropy_with_logits`, `l2_loss`, `mean_squared_error`, `huber_loss`),
//! `clip_by_norm`, and the optimizer updates (`apply_gradient_descent`, `apply_momentum`,
//! `apply_adagrad`, `apply_rms_prop`, `apply_adam`, `apply_adamw`), each a composite of
//! elementwise ops and reductions, so that it fuses with its neighbours and differentiates
//! through the rules of its parts.

use super::{Call, Lowerer, Span, Value};
use crate::infer;
use crate::ir::*;
use syn::Expr;

/// Which loss a row lowers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Loss {
    SoftmaxCrossEntropy,
    SparseSoftmaxCrossEntropy,
    SigmoidCrossEntropy,
    L2,
    /// TF1's `tf.losses.mean_squared_error`: the mean of `(predictions - labels)^2`.
    MeanSquaredError,
    /// TF1's `tf.losses.huber_loss`: quadratic within `delta`, linear beyond, averaged.
    Huber,
    /// `tf.clip_by_norm` over all axes (a rescaling, grouped with the losses as a training op).
    ClipByNorm,
}

/// Which optimizer update a row lowers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Optimizer {
    GradientDescent,
    Momentum,
    Adagrad,
    RmsProp,
    Adam,
    AdamW,
}

impl Lowerer<'_> {
    /// A float operand, or `None` after reporting what it is.
    fn float_arg(&mut self, op: &str, what: &str, e: &Expr) -> Option<NodeId> {
        let x = self.operand(e);
        let x = self.concrete(x);
        let n = self.graph.node(x);
        if n.poisoned {
            return None;
        }
        if !n.dtype.is_float() {
            let msg = format!(
                "`{op}`'s `{what}` must be a float tensor, found {}",
                type_str(n.dtype, &n.shape)
            );
            self.diag.error(crate::ir::Spanned::span(e), msg);
            return None;
        }
        Some(x)
    }

    /// Reports `msg` at `e` unless `a` and `b` have one dtype and shape.
    fn same_type(
        &mut self,
        op: &str,
        (a, an): (NodeId, &str),
        (b, bn): (NodeId, &str),
        e: &Expr,
    ) -> bool {
        let (na, nb) = (self.graph.node(a).clone(), self.graph.node(b).clone());
        if na.dtype == nb.dtype && na.shape == nb.shape {
            return true;
        }
        let msg = format!(
            "`{op}`'s `{bn}` must have `{an}`'s dtype and shape, {}; found {}",
            type_str(na.dtype, &na.shape),
            type_str(nb.dtype, &nb.shape)
        );
        self.diag.error(crate::ir::Spanned::span(e), msg);
        false
    }

    pub(super) fn lower_loss(&mut self, loss: Loss, call: &Call) -> NodeId {
        let (args, span) = (call.args, call.span);
        let name = call.name;
        match loss {
            Loss::L2 => {
                // sum(x^2) / 2, TF's l2_loss.
                let Some(x) = self.float_arg(name, "t", args[0]) else {
                    return self.poisoned(span);
                };
                let sq = self.binary(BinaryOp::Mul, x, x, span);
                let s = self.sum_all(sq, span);
                self.bin_c(BinaryOp::Mul, s, 0.5, span)
            }
            Loss::SoftmaxCrossEntropy => {
                // -sum(labels * log_softmax(logits)) over the last axis.
                let labels = self.float_arg(name, "labels", args[0]);
                let logits = self.float_arg(name, "logits", args[1]);
                let (Some(labels), Some(logits)) = (labels, logits) else {
                    return self.poisoned(span);
                };
                if !self.same_type(name, (logits, "logits"), (labels, "labels"), args[0]) {
                    return self.poisoned(span);
                }
                let rank = self.graph.node(logits).shape.len();
                if rank == 0 {
                    return self.loss_rank_error(name, args[1], span);
                }
                let lsm = self.log_softmax_last(logits, span);
                let p = self.binary(BinaryOp::Mul, labels, lsm, span);
                let s = self.sum_axes(p, vec![rank - 1], false, span);
                self.un(UnaryOp::Neg, s, span)
            }
            Loss::SparseSoftmaxCrossEntropy => self.sparse_cross_entropy(call),
            Loss::MeanSquaredError | Loss::Huber => {
                let labels = self.float_arg(name, "labels", args[0]);
                let predictions = self.float_arg(name, "predictions", args[1]);
                let (Some(labels), Some(predictions)) = (labels, predictions) else {
                    return self.poisoned(span);
                };
                if !self.same_type(
                    name,
                    (predictions, "predictions"),
                    (labels, "labels"),
                    args[0],
                ) {
                    return self.poisoned(span);
                }
                let error = self.binary(BinaryOp::Sub, predictions, labels, span);
                let losses = if loss == Loss::MeanSquaredError {
                    self.un(UnaryOp::Square, error, span)
                } else {
                    // TF's: q = min(|e|, delta); 0.5 * q^2 + delta * (|e| - q).
                    let dt = self.graph.node(error).dtype;
                    let Some(delta) = self.scalar_arg(name, "delta", args.get(2), 1.0, dt, span)
                    else {
                        return self.poisoned(span);
                    };
                    let abs = self.un(UnaryOp::Abs, error, span);
                    let q = self.binary(BinaryOp::Minimum, abs, delta, span);
                    let linear = self.binary(BinaryOp::Sub, abs, q, span);
                    let q2 = self.un(UnaryOp::Square, q, span);
                    let half = self.bin_c(BinaryOp::Mul, q2, 0.5, span);
                    let dl = self.binary(BinaryOp::Mul, delta, linear, span);
                    self.binary(BinaryOp::Add, half, dl, span)
                };
                self.mean_all(losses, span)
            }
            Loss::ClipByNorm => {
                // TF's: t * clip_norm / max(l2norm(t), clip_norm), with l2norm taken through a
                // select so that an all-zero t has a zero gradient rather than NaN.
                let Some(t) = self.float_arg(name, "t", args[0]) else {
                    return self.poisoned(span);
                };
                let dt = self.graph.node(t).dtype;
                let Some(clip) = self.scalar_arg(name, "clip_norm", args.get(1), 1.0, dt, span)
                else {
                    return self.poisoned(span);
                };
                let sq = self.un(UnaryOp::Square, t, span);
                let l2sum = self.sum_all(sq, span);
                let positive = self.cmp_c(CmpOp::Gt, l2sum, 0.0, span);
                let one = self.constant(1.0, dt, span);
                let safe = self.select3(positive, l2sum, one, span);
                let root = self.un(UnaryOp::Sqrt, safe, span);
                let l2norm = self.select3(positive, root, l2sum, span);
                let scaled = self.binary(BinaryOp::Mul, t, clip, span);
                let den = self.binary(BinaryOp::Maximum, l2norm, clip, span);
                self.binary(BinaryOp::Div, scaled, den, span)
            }
            Loss::SigmoidCrossEntropy => {
                // max(x, 0) - x * z + log(1 + exp(-|x|)), TF's stable form.
                let labels = self.float_arg(name, "labels", args[0]);
                let logits = self.float_arg(name, "logits", args[1]);
                let (Some(z), Some(x)) = (labels, logits) else {
                    return self.poisoned(span);
                };
                if !self.same_type(name, (x, "logits"), (z, "labels"), args[0]) {
                    return self.poisoned(span);
                }
                let r = self.un(UnaryOp::Relu, x, span);
                let xz = self.binary(BinaryOp::Mul, x, z, span);
                let a = self.un(UnaryOp::Abs, x, span);
                let na = self.un(UnaryOp::Neg, a, span);
                let sp = self.un(UnaryOp::Softplus, na, span);
                let d = self.binary(BinaryOp::Sub, r, xz, span);
                self.binary(BinaryOp::Add, d, sp, span)
            }
        }
    }

    /// A scalar argument of `dtype` (a host scalar or a rank-0 tensor), `default` when absent,
    /// or `None` after reporting what it is.
    fn scalar_arg(
        &mut self,
        op: &str,
        what: &str,
        e: Option<&&Expr>,
        default: f64,
        dtype: DType,
        span: Span,
    ) -> Option<NodeId> {
        let Some(e) = e else {
            return Some(self.constant(default, dtype, span));
        };
        let v = self.operand(e);
        if self.is_poisoned(&[v]) {
            return None;
        }
        let v = self.resolve_weak_to(v, dtype, span);
        let n = self.graph.node(v);
        if n.dtype == dtype && n.shape.is_empty() {
            return Some(v);
        }
        let msg = format!(
            "`{op}`'s `{what}` must be a {dtype} scalar; found {}",
            type_str(n.dtype, &n.shape)
        );
        self.diag.error(crate::ir::Spanned::span(*e), msg);
        None
    }

    /// The mean of every element of `x`, a scalar (symbolic counts too).
    fn mean_all(&mut self, x: NodeId, span: Span) -> NodeId {
        let n = self.graph.node(x).clone();
        let axes: Vec<usize> = (0..n.shape.len()).collect();
        if axes.is_empty() {
            return x;
        }
        let r = infer::reduce("reduce_mean", (n.dtype, &n.shape), &axes, false);
        self.typed(
            Op::Reduce {
                kind: ReduceKind::Mean,
                axes,
                keep_dims: false,
            },
            vec![x],
            r,
            span,
        )
    }

    fn loss_rank_error(&mut self, name: &str, e: &Expr, span: Span) -> NodeId {
        let msg = format!("`{name}`'s `logits` must have rank 1 or more (classes on the last axis), found a scalar");
        self.diag.error(crate::ir::Spanned::span(e), msg);
        self.poisoned(span)
    }

    /// `log_softmax(x, -1)`.
    fn log_softmax_last(&mut self, x: NodeId, span: Span) -> NodeId {
        let n = self.graph.node(x).clone();
        let axis = n.shape.len() - 1;
        self.typed(
            Op::Softmax { axis, log: true },
            vec![x],
            Ok((n.dtype, n.shape)),
            span,
        )
    }

    /// `sparse_softmax_cross_entropy_with_logits(labels, logits)`: `-log_softmax(logits)[label]`
    /// per example; a label outside `0..classes` fails the call (TF raises too).
    fn sparse_cross_entropy(&mut self, call: &Call) -> NodeId {
        let (args, span, name) = (call.args, call.span, call.name);
        let labels = self.operand(args[0]);
        let labels = self.concrete(labels);
        let logits = self.float_arg(name, "logits", args[1]);
        let Some(logits) = logits else {
            return self.poisoned(span);
        };
        let (nl, nx) = (
            self.graph.node(labels).clone(),
            self.graph.node(logits).clone(),
        );
        if nl.poisoned {
            return self.poisoned(span);
        }
        if !nl.dtype.is_int() {
            let msg = format!(
                "`{name}`'s `labels` must be i32 or i64 class indices, found {}",
                type_str(nl.dtype, &nl.shape)
            );
            self.diag.error(crate::ir::Spanned::span(args[0]), msg);
            return self.poisoned(span);
        }
        if nx.shape.is_empty() {
            return self.loss_rank_error(name, args[1], span);
        }
        let classes = nx.shape[nx.shape.len() - 1].clone();
        if nl.shape.as_slice() != &nx.shape[..nx.shape.len() - 1] {
            let msg = format!(
                "`{name}`'s `labels` must have the shape of `logits` without its last (class) axis: logits are {}, so labels must be {}; found {}",
                type_str(nx.dtype, &nx.shape),
                shape_str(&nx.shape[..nx.shape.len() - 1]),
                shape_str(&nl.shape)
            );
            self.diag.error(crate::ir::Spanned::span(args[0]), msg);
            return self.poisoned(span);
        }
        let Dim::Const(c) = classes else {
            let msg = format!("`{name}` needs a static number of classes (the last axis of `logits`), found {classes}");
            self.diag.error(crate::ir::Spanned::span(args[1]), msg);
            return self.poisoned(span);
        };
        // The run-time check of every label, before the loss reads any.
        let zero = self.constant(0.0, nl.dtype, span);
        let limit = self.constant(c as f64, nl.dtype, span);
        for (kind, bound, text) in [
            (AssertKind::NonNegative, None, "is negative"),
            (
                AssertKind::Less,
                Some(limit),
                "is not below the number of classes",
            ),
        ] {
            let mut inputs = vec![labels];
            inputs.extend(bound);
            let message = format!("`{name}`: a label {text} ({c}), so it names no class");
            let r = match bound {
                Some(b) => {
                    let nb = self.graph.node(b).clone();
                    infer::compare(kind.name(), (nl.dtype, &nl.shape), (nb.dtype, &nb.shape))
                }
                None => Ok((DType::Bool, nl.shape.clone())),
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
        let _ = zero;
        // hit[..., k] = (labels[...] == k); loss = -sum(select(hit, log_softmax, 0)).
        let class_ids = self.push(
            Op::Sel(SelOp::Range {
                start: Scalar::Int(0),
                delta: Scalar::Int(1),
            }),
            vec![],
            nl.dtype,
            vec![Dim::Const(c)],
            span,
        );
        let mut expanded = nl.shape.clone();
        expanded.push(Dim::Const(1));
        let lab = self.reshape_to(labels, expanded, span);
        let hit = self.compare(CmpOp::Eq, lab, class_ids, span);
        let lsm = self.log_softmax_last(logits, span);
        let picked = self.mask(hit, lsm, true, span);
        let s = self.sum_axes(picked, vec![nx.shape.len() - 1], false, span);
        self.un(UnaryOp::Neg, s, span)
    }

    /// The optimizer updates: the new values of the parameter and of its state, a tuple
    /// (`var` alone for plain gradient descent), each one fused elementwise loop.
    pub(super) fn lower_optimizer(&mut self, opt: Optimizer, call: &Call) -> Value {
        let (args, span, name) = (call.args, call.span, call.name);
        let arg_names = call_arg_names(opt);
        // A mistake poisons every result, so that the caller's tuple pattern adds no error.
        let results = match opt {
            Optimizer::GradientDescent => 1,
            Optimizer::Momentum | Optimizer::Adagrad => 2,
            Optimizer::RmsProp | Optimizer::Adam | Optimizer::AdamW => 3,
        };
        let poisoned = |lw: &mut Self| {
            if results == 1 {
                Value::Tensor(lw.poisoned(span))
            } else {
                Value::Tuple(
                    (0..results)
                        .map(|_| Value::Tensor(lw.poisoned(span)))
                        .collect(),
                )
            }
        };
        let mut vals = Vec::new();
        for (i, e) in args.iter().enumerate() {
            if arg_names[i] != "use_nesterov" {
                let v = self.operand(e);
                vals.push((v, i, *e));
            }
        }
        if self.is_poisoned(&vals.iter().map(|v| v.0).collect::<Vec<_>>()) {
            return poisoned(self);
        }
        let var = self.concrete(vals[0].0);
        let vn = self.graph.node(var).clone();
        if !vn.dtype.is_float() {
            let msg = format!(
                "`{name}`'s `var` must be a float tensor, found {}",
                type_str(vn.dtype, &vn.shape)
            );
            self.diag.error(crate::ir::Spanned::span(args[0]), msg);
            return poisoned(self);
        }
        // Every other operand: of `var`'s dtype; the state and the gradient of its shape.
        let mut typed = vec![var];
        for &(v, i, e) in &vals[1..] {
            let v = self.resolve_weak_to(v, vn.dtype, span);
            let n = self.graph.node(v).clone();
            let full = matches!(
                arg_names[i],
                "accum" | "m" | "v" | "ms" | "mom" | "grad" | "delta"
            );
            let ok = n.dtype == vn.dtype
                && if full {
                    n.shape == vn.shape
                } else {
                    n.shape.is_empty()
                };
            if !ok {
                let want = if full {
                    type_str(vn.dtype, &vn.shape)
                } else {
                    format!("a {} scalar", vn.dtype)
                };
                let msg = format!(
                    "`{name}`'s `{}` must be {want} (as `var` is {}); found {}",
                    arg_names[i],
                    type_str(vn.dtype, &vn.shape),
                    type_str(n.dtype, &n.shape)
                );
                self.diag.error(crate::ir::Spanned::span(e), msg);
                return poisoned(self);
            }
            typed.push(v);
        }
        use BinaryOp::{Add, Div, Mul, Sub};
        let t = &typed;
        match opt {
            Optimizer::GradientDescent => {
                // var - alpha * delta
                let step = self.binary(Mul, t[1], t[2], span);
                Value::Tensor(self.binary(Sub, t[0], step, span))
            }
            Optimizer::Momentum => {
                // accum = accum * momentum + grad; var -= lr * accum
                // (Nesterov: var -= lr * grad + lr * momentum * accum).
                let (var, accum, lr, grad, momentum) = (t[0], t[1], t[2], t[3], t[4]);
                let nesterov = args
                    .get(5)
                    .and_then(|e| self.host_literal_bool(e))
                    .unwrap_or(false);
                let am = self.binary(Mul, accum, momentum, span);
                let accum = self.binary(Add, am, grad, span);
                let step = if nesterov {
                    let lg = self.binary(Mul, grad, lr, span);
                    let lm = self.binary(Mul, lr, momentum, span);
                    let la = self.binary(Mul, accum, lm, span);
                    self.binary(Add, lg, la, span)
                } else {
                    self.binary(Mul, accum, lr, span)
                };
                let var = self.binary(Sub, var, step, span);
                Value::Tuple(vec![Value::Tensor(var), Value::Tensor(accum)])
            }
            Optimizer::Adagrad => {
                // TF's ApplyAdagrad: accum += grad^2; var -= lr * grad / sqrt(accum).
                let (var, accum, lr, grad) = (t[0], t[1], t[2], t[3]);
                let g2 = self.binary(Mul, grad, grad, span);
                let accum = self.binary(Add, accum, g2, span);
                let root = self.un(UnaryOp::Sqrt, accum, span);
                let lg = self.binary(Mul, grad, lr, span);
                let step = self.binary(Div, lg, root, span);
                let var = self.binary(Sub, var, step, span);
                Value::Tuple(vec![Value::Tensor(var), Value::Tensor(accum)])
            }
            Optimizer::RmsProp => {
                // TF's ApplyRMSProp: ms += (grad^2 - ms) * (1 - rho);
                // mom = mom * momentum + lr * grad / sqrt(ms + epsilon); var -= mom.
                let (var, ms, mom, lr, rho, momentum, eps, grad) =
                    (t[0], t[1], t[2], t[3], t[4], t[5], t[6], t[7]);
                let one = self.constant(1.0, vn.dtype, span);
                let g2 = self.binary(Mul, grad, grad, span);
                let gm = self.binary(Sub, g2, ms, span);
                let one_rho = self.binary(Sub, one, rho, span);
                let dms = self.binary(Mul, gm, one_rho, span);
                let ms = self.binary(Add, ms, dms, span);
                let mm = self.binary(Mul, mom, momentum, span);
                let se = self.binary(Add, ms, eps, span);
                let root = self.un(UnaryOp::Sqrt, se, span);
                let lg = self.binary(Mul, grad, lr, span);
                let q = self.binary(Div, lg, root, span);
                let mom = self.binary(Add, mm, q, span);
                let var = self.binary(Sub, var, mom, span);
                Value::Tuple(vec![
                    Value::Tensor(var),
                    Value::Tensor(ms),
                    Value::Tensor(mom),
                ])
            }
            Optimizer::Adam | Optimizer::AdamW => {
                // TF's ApplyAdam: lr_t = lr * sqrt(1 - beta2^t) / (1 - beta1^t);
                // m += (g - m) * (1 - beta1); v += (g^2 - v) * (1 - beta2);
                // var -= lr_t * m / (sqrt(v) + epsilon). AdamW first decays var by lr * wd
                // (decoupled weight decay, PyTorch's AdamW).
                let (var, m, v, b1p, b2p, lr, b1, b2, eps) =
                    (t[0], t[1], t[2], t[3], t[4], t[5], t[6], t[7], t[8]);
                let (wd, grad) = if opt == Optimizer::AdamW {
                    (Some(t[9]), t[10])
                } else {
                    (None, t[9])
                };
                let dt = vn.dtype;
                let one = self.constant(1.0, dt, span);
                let c2 = self.binary(Sub, one, b2p, span);
                let c2 = self.un(UnaryOp::Sqrt, c2, span);
                let c1 = self.binary(Sub, one, b1p, span);
                let lr_t = self.binary(Mul, lr, c2, span);
                let lr_t = self.binary(Div, lr_t, c1, span);
                let gm = self.binary(Sub, grad, m, span);
                let one_b1 = self.binary(Sub, one, b1, span);
                let dm = self.binary(Mul, gm, one_b1, span);
                let m = self.binary(Add, m, dm, span);
                let g2 = self.binary(Mul, grad, grad, span);
                let gv = self.binary(Sub, g2, v, span);
                let one_b2 = self.binary(Sub, one, b2, span);
                let dv = self.binary(Mul, gv, one_b2, span);
                let v = self.binary(Add, v, dv, span);
                let var = match wd {
                    Some(wd) => {
                        let lw = self.binary(Mul, lr, wd, span);
                        let decay = self.binary(Mul, var, lw, span);
                        self.binary(Sub, var, decay, span)
                    }
                    None => var,
                };
                let sv = self.un(UnaryOp::Sqrt, v, span);
                let den = self.binary(Add, sv, eps, span);
                let q = self.binary(Div, m, den, span);
                let step = self.binary(Mul, q, lr_t, span);
                let var = self.binary(Sub, var, step, span);
                Value::Tuple(vec![Value::Tensor(var), Value::Tensor(m), Value::Tensor(v)])
            }
        }
    }
}

/// The argument names of an optimizer's row, in order (TF's).
pub fn call_arg_names(opt: Optimizer) -> &'static [&'static str] {
    match opt {
        Optimizer::GradientDescent => &["var", "alpha", "delta"],
        Optimizer::Momentum => &["var", "accum", "lr", "grad", "momentum", "use_nesterov"],
        Optimizer::Adagrad => &["var", "accum", "lr", "grad"],
        Optimizer::RmsProp => &[
            "var", "ms", "mom", "lr", "rho", "momentum", "epsilon", "grad",
        ],
        Optimizer::Adam => &[
            "var",
            "m",
            "v",
            "beta1_power",
            "beta2_power",
            "lr",
            "beta1",
            "beta2",
            "epsilon",
            "grad",
        ],
        Optimizer::AdamW => &[
            "var",
            "m",
            "v",
            "beta1_power",
            "beta2_power",
            "lr",
            "beta1",
            "beta2",
            "epsilon",
            "weight_decay",
            "grad",
        ],
    }
}
