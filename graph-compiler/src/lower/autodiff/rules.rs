//! The gradient rule of every differentiable op: given the adjoint `g` of a node's result,
//! the contributions to its inputs' adjoints (TensorFlow's registered gradients, op by op).
//!
//! `docs/OPS.md`'s gradient column (from `ops.rs`) says in words what each rule here does;
//! the selection, layout and scan ops' rules are in `selection.rs`, the convolutions', pooling's
//! and `gather`'s in `nn.rs`.

use super::super::Lowerer;
use super::Sweep;
use crate::ir::*;
use std::f64::consts::PI;

/// The contributions of one node's backward: (input, adjoint contribution) pairs.
pub(super) type Contributions = Vec<(NodeId, NodeId)>;

impl Lowerer<'_> {
    /// The backward of forward node `id` given its adjoint `g`; an `Err` names an op without a rule.
    pub(super) fn vjp(
        &mut self,
        sweep: &mut Sweep,
        id: NodeId,
        g: NodeId,
    ) -> Result<Contributions, String> {
        let node = self.graph.node(id).clone();
        let span = sweep.span;
        let inputs = node.inputs.clone();
        let wanted: Vec<bool> = inputs.iter().map(|&x| sweep.active(x)).collect();
        let wants = |i: usize| wanted.get(i).copied().unwrap_or(false);
        let mut out: Contributions = Vec::new();
        match &node.op {
            Op::Input { .. } | Op::Host { .. } | Op::Const { .. } => {}
            Op::Fill => {
                if wants(0) {
                    let s = self.sum_all(g, span);
                    out.push((inputs[0], s));
                }
            }
            // Piecewise constant: no gradient flows (TF's are zeros or None).
            Op::Unary(u) if u.is_step() => {}
            Op::Unary(u) => {
                if wants(0) {
                    let c = self.unary_rule(sweep, *u, id, inputs[0], g)?;
                    out.push((inputs[0], c));
                }
            }
            Op::Binary(b) => {
                let (wa, wb) = (wants(0), wants(1));
                let (ca, cb) = self.binary_rule(sweep, *b, id, inputs[0], inputs[1], g, wa, wb)?;
                for (i, c) in [(0, ca), (1, cb)] {
                    if let Some(c) = c {
                        let shape = self.graph.node(inputs[i]).shape.clone();
                        let c = self.unbroadcast(c, &shape, span);
                        out.push((inputs[i], c));
                    }
                }
            }
            Op::Select => {
                let c = self.forward_value(sweep, inputs[0]);
                for (i, keep) in [(1, true), (2, false)] {
                    if wants(i) {
                        let m = self.mask(c, g, keep, span);
                        let shape = self.graph.node(inputs[i]).shape.clone();
                        let m = self.unbroadcast(m, &shape, span);
                        out.push((inputs[i], m));
                    }
                }
            }
            Op::Cast => {
                if wants(0) {
                    let dt = self.graph.node(inputs[0]).dtype;
                    let c = self.cast_to(g, dt, span);
                    out.push((inputs[0], c));
                }
            }
            Op::Reduce {
                kind,
                axes,
                keep_dims: _,
            } => {
                if wants(0) {
                    let c = self.reduce_rule(sweep, *kind, axes, id, inputs[0], g)?;
                    out.push((inputs[0], c));
                }
            }
            Op::Norm => {
                if wants(0) {
                    // d|x| = g * x / |x| (NaN at x = 0, as TF's).
                    let x = self.forward_value(sweep, inputs[0]);
                    let y = self.forward_value(sweep, id);
                    let gy = self.bin(BinaryOp::Div, g, y, span);
                    let c = self.bin(BinaryOp::Mul, x, gy, span);
                    out.push((inputs[0], c));
                }
            }
            Op::MatMul {
                transpose_a,
                transpose_b,
            } => {
                let (ta, tb) = (*transpose_a, *transpose_b);
                let a = self.forward_value(sweep, inputs[0]);
                let b = self.forward_value(sweep, inputs[1]);
                if wants(0) {
                    // dA = g @ op(B)^T, stored transposed when A is.
                    let c = if !ta {
                        self.matmul_t(g, false, b, !tb, span)
                    } else {
                        self.matmul_t(b, tb, g, true, span)
                    };
                    let shape = self.graph.node(inputs[0]).shape.clone();
                    let c = self.unbroadcast(c, &shape, span);
                    out.push((inputs[0], c));
                }
                if wants(1) {
                    // dB = op(A)^T @ g, stored transposed when B is.
                    let c = if !tb {
                        self.matmul_t(a, !ta, g, false, span)
                    } else {
                        self.matmul_t(g, true, a, ta, span)
                    };
                    let shape = self.graph.node(inputs[1]).shape.clone();
                    let c = self.unbroadcast(c, &shape, span);
                    out.push((inputs[1], c));
                }
            }
            Op::Transpose { perm } => {
                if wants(0) {
                    let mut inverse = vec![0; perm.len()];
                    for (i, &p) in perm.iter().enumerate() {
                        inverse[p] = i;
                    }
                    let c = self.transpose_by(g, inverse, span);
                    out.push((inputs[0], c));
                }
            }
            Op::Reshape => {
                if wants(0) {
                    let shape = self.graph.node(inputs[0]).shape.clone();
                    let c = self.reshape_to(g, shape, span);
                    out.push((inputs[0], c));
                }
            }
            Op::BiasAdd => {
                if wants(0) {
                    out.push((inputs[0], g));
                }
                if wants(1) {
                    let rank = self.graph.node(g).shape.len();
                    let c = self.sum_axes(g, (0..rank - 1).collect(), false, span);
                    out.push((inputs[1], c));
                }
            }
            Op::Softmax { axis, log } => {
                if wants(0) {
                    let y = self.forward_value(sweep, id);
                    let c = if *log {
                        // g - exp(y) * sum(g)
                        let s = self.sum_axes(g, vec![*axis], true, span);
                        let p = self.un(UnaryOp::Exp, y, span);
                        let ps = self.bin(BinaryOp::Mul, p, s, span);
                        self.bin(BinaryOp::Sub, g, ps, span)
                    } else {
                        // y * (g - sum(g * y))
                        let gy = self.bin(BinaryOp::Mul, g, y, span);
                        let s = self.sum_axes(gy, vec![*axis], true, span);
                        let d = self.bin(BinaryOp::Sub, g, s, span);
                        self.bin(BinaryOp::Mul, y, d, span)
                    };
                    out.push((inputs[0], c));
                }
            }
            Op::Sel(
                sel @ (SelOp::Cumulative { .. }
                | SelOp::TopK { .. }
                | SelOp::TakeAlongLast
                | SelOp::ScatterAlongLast
                | SelOp::Resize { .. }
                | SelOp::ResizeGrad { .. }),
            ) => {
                let sel = sel.clone();
                self.scan_rule(sweep, &sel, &node, id, g, &wants, &mut out)?;
            }
            Op::Sel(SelOp::Gather { .. } | SelOp::GatherGrad { .. }) => {
                self.nn_rule(sweep, &node, g, &wants, &mut out)?
            }
            Op::Sel(sel) => {
                let sel = sel.clone();
                self.selection_rule(&sel, &node, g, &wants, &mut out, span)?;
            }
            Op::Compare(_) | Op::Assert { .. } => {}
            Op::CondOut { .. } => unreachable!("conds are differentiated as a unit"),
            Op::Conv2d { .. }
            | Op::ConvGeneral { .. }
            | Op::Conv2dBackpropInput { .. }
            | Op::Conv2dBackpropFilter { .. }
            | Op::Pool { .. }
            | Op::PoolGrad { .. } => self.nn_rule(sweep, &node, g, &wants, &mut out)?,
        }
        Ok(out)
    }

    /// `d u(x)`: the adjoint of `x` given `g`, the adjoint of `y = u(x)`.
    fn unary_rule(
        &mut self,
        sweep: &mut Sweep,
        u: UnaryOp,
        y: NodeId,
        x: NodeId,
        g: NodeId,
    ) -> Result<NodeId, String> {
        let span = sweep.span;
        use BinaryOp::{Add, Div, Mul, Sub};
        let c = match u {
            UnaryOp::Neg => self.un(UnaryOp::Neg, g, span),
            UnaryOp::Abs => {
                // g * sign(x): g where x > 0, -g where x < 0, 0 at 0.
                let x = self.forward_value(sweep, x);
                let pos = self.cmp_c(CmpOp::Gt, x, 0.0, span);
                let neg = self.cmp_c(CmpOp::Lt, x, 0.0, span);
                let ng = self.un(UnaryOp::Neg, g, span);
                let on_neg = self.mask(neg, ng, true, span);
                self.select3(pos, g, on_neg, span)
            }
            UnaryOp::Exp => {
                let y = self.forward_value(sweep, y);
                self.bin(Mul, g, y, span)
            }
            UnaryOp::Log => {
                let x = self.forward_value(sweep, x);
                self.bin(Div, g, x, span)
            }
            UnaryOp::Sqrt => {
                // g * 0.5 / y
                let y = self.forward_value(sweep, y);
                let h = self.bin_c(Mul, g, 0.5, span);
                self.bin(Div, h, y, span)
            }
            UnaryOp::Rsqrt => {
                // -0.5 * g * y^3
                let y = self.forward_value(sweep, y);
                let y2 = self.bin(Mul, y, y, span);
                let y3 = self.bin(Mul, y2, y, span);
                let gy3 = self.bin(Mul, g, y3, span);
                self.bin_c(Mul, gy3, -0.5, span)
            }
            UnaryOp::Square => {
                let x = self.forward_value(sweep, x);
                let x2 = self.bin_c(Mul, x, 2.0, span);
                self.bin(Mul, g, x2, span)
            }
            UnaryOp::Tanh => {
                // g * (1 - y^2)
                let y = self.forward_value(sweep, y);
                let y2 = self.bin(Mul, y, y, span);
                let dt = self.graph.node(y).dtype;
                let one = self.constant(1.0, dt, span);
                let d = self.bin(Sub, one, y2, span);
                self.bin(Mul, g, d, span)
            }
            UnaryOp::Sigmoid => {
                // g * y * (1 - y)
                let y = self.forward_value(sweep, y);
                let dt = self.graph.node(y).dtype;
                let one = self.constant(1.0, dt, span);
                let d = self.bin(Sub, one, y, span);
                let yd = self.bin(Mul, y, d, span);
                self.bin(Mul, g, yd, span)
            }
            UnaryOp::Relu => {
                // g where x > 0 (TF's ReluGrad reads the result: y > 0 is the same set).
                let y = self.forward_value(sweep, y);
                let pos = self.cmp_c(CmpOp::Gt, y, 0.0, span);
                self.mask(pos, g, true, span)
            }
            UnaryOp::Sin => {
                let x = self.forward_value(sweep, x);
                let c = self.un(UnaryOp::Cos, x, span);
                self.bin(Mul, g, c, span)
            }
            UnaryOp::Cos => {
                let x = self.forward_value(sweep, x);
                let s = self.un(UnaryOp::Sin, x, span);
                let ns = self.un(UnaryOp::Neg, s, span);
                self.bin(Mul, g, ns, span)
            }
            UnaryOp::Erf => {
                // g * 2/sqrt(pi) * exp(-x^2)
                let x = self.forward_value(sweep, x);
                let x2 = self.bin(Mul, x, x, span);
                let nx2 = self.un(UnaryOp::Neg, x2, span);
                let e = self.un(UnaryOp::Exp, nx2, span);
                let d = self.bin_c(Mul, e, 2.0 / PI.sqrt(), span);
                self.bin(Mul, g, d, span)
            }
            UnaryOp::Gelu => {
                // 0.5 * (1 + erf(x / sqrt 2)) + x * exp(-x^2 / 2) / sqrt(2 pi)
                let x = self.forward_value(sweep, x);
                let xs = self.bin_c(Mul, x, std::f64::consts::FRAC_1_SQRT_2, span);
                let erf = self.un(UnaryOp::Erf, xs, span);
                let cdf = self.bin_c(Add, erf, 1.0, span);
                let cdf = self.bin_c(Mul, cdf, 0.5, span);
                let x2 = self.bin(Mul, x, x, span);
                let e = self.bin_c(Mul, x2, -0.5, span);
                let e = self.un(UnaryOp::Exp, e, span);
                let pdf = self.bin_c(Mul, e, 1.0 / (2.0 * PI).sqrt(), span);
                let xpdf = self.bin(Mul, x, pdf, span);
                let d = self.bin(Add, cdf, xpdf, span);
                self.bin(Mul, g, d, span)
            }
            UnaryOp::GeluTanh => {
                // t = tanh(c (x + 0.044715 x^3)):
                // 0.5 (1 + t) + 0.5 x (1 - t^2) c (1 + 3 * 0.044715 x^2)
                let c = (2.0 / PI).sqrt();
                let x = self.forward_value(sweep, x);
                let x2 = self.bin(Mul, x, x, span);
                let x3 = self.bin(Mul, x2, x, span);
                let inner = self.bin_c(Mul, x3, 0.044715, span);
                let inner = self.bin(Add, x, inner, span);
                let inner = self.bin_c(Mul, inner, c, span);
                let t = self.un(UnaryOp::Tanh, inner, span);
                let left = self.bin_c(Add, t, 1.0, span);
                let left = self.bin_c(Mul, left, 0.5, span);
                let t2 = self.bin(Mul, t, t, span);
                let dt = self.graph.node(t).dtype;
                let one = self.constant(1.0, dt, span);
                let sech2 = self.bin(Sub, one, t2, span);
                let poly = self.bin_c(Mul, x2, 3.0 * 0.044715, span);
                let poly = self.bin_c(Add, poly, 1.0, span);
                let poly = self.bin_c(Mul, poly, c, span);
                let right = self.bin(Mul, sech2, poly, span);
                let right = self.bin(Mul, x, right, span);
                let right = self.bin_c(Mul, right, 0.5, span);
                let d = self.bin(Add, left, right, span);
                self.bin(Mul, g, d, span)
            }
            UnaryOp::Softplus => {
                let x = self.forward_value(sweep, x);
                let s = self.un(UnaryOp::Sigmoid, x, span);
                self.bin(Mul, g, s, span)
            }
            UnaryOp::Elu => {
                // g where x > 0, else g * (y + 1)
                let x = self.forward_value(sweep, x);
                let y = self.forward_value(sweep, y);
                let pos = self.cmp_c(CmpOp::Gt, x, 0.0, span);
                let y1 = self.bin_c(Add, y, 1.0, span);
                let gy1 = self.bin(Mul, g, y1, span);
                self.select3(pos, g, gy1, span)
            }
            UnaryOp::LogicalNot => unreachable!("bool values carry no gradient"),
            UnaryOp::Relu6 => {
                // g where 0 < x < 6 (TF's Relu6Grad).
                let x = self.forward_value(sweep, x);
                let above = self.cmp_c(CmpOp::Gt, x, 0.0, span);
                let below = self.cmp_c(CmpOp::Lt, x, 6.0, span);
                let inside = self.bin(BinaryOp::LogicalAnd, above, below, span);
                self.mask(inside, g, true, span)
            }
            UnaryOp::Log1p => {
                let x = self.forward_value(sweep, x);
                let x1 = self.bin_c(Add, x, 1.0, span);
                self.bin(Div, g, x1, span)
            }
            UnaryOp::Expm1 => {
                // g * exp(x) (TF's; exact where y + 1 would round away a small e^x).
                let x = self.forward_value(sweep, x);
                let e = self.un(UnaryOp::Exp, x, span);
                self.bin(Mul, g, e, span)
            }
            UnaryOp::Reciprocal => {
                // -g * y^2 (TF's ReciprocalGrad)
                let y = self.forward_value(sweep, y);
                let y2 = self.bin(Mul, y, y, span);
                let gy2 = self.bin(Mul, g, y2, span);
                self.un(UnaryOp::Neg, gy2, span)
            }
            UnaryOp::Sign | UnaryOp::Floor | UnaryOp::Ceil | UnaryOp::Round => {
                unreachable!("piecewise constant ops have no rule (see `vjp`)")
            }
        };
        Ok(c)
    }

    /// The adjoints of both operands of `y = a op b` (before un-broadcasting), where wanted.
    #[allow(clippy::too_many_arguments)]
    fn binary_rule(
        &mut self,
        sweep: &mut Sweep,
        op: BinaryOp,
        y: NodeId,
        a: NodeId,
        b: NodeId,
        g: NodeId,
        wa: bool,
        wb: bool,
    ) -> Result<(Option<NodeId>, Option<NodeId>), String> {
        use BinaryOp::*;
        let span = sweep.span;
        let mut ca = None;
        let mut cb = None;
        match op {
            Add => {
                ca = wa.then_some(g);
                cb = wb.then_some(g);
            }
            Sub => {
                ca = wa.then_some(g);
                if wb {
                    cb = Some(self.un(UnaryOp::Neg, g, span));
                }
            }
            Mul => {
                if wa {
                    let bv = self.forward_value(sweep, b);
                    ca = Some(self.bin(Mul, g, bv, span));
                }
                if wb {
                    let av = self.forward_value(sweep, a);
                    cb = Some(self.bin(Mul, g, av, span));
                }
            }
            Div => {
                let bv = self.forward_value(sweep, b);
                if wa {
                    ca = Some(self.bin(Div, g, bv, span));
                }
                if wb {
                    // g * ((-a / b) / b), TF's RealDiv gradient.
                    let av = self.forward_value(sweep, a);
                    let na = self.un(UnaryOp::Neg, av, span);
                    let q = self.bin(Div, na, bv, span);
                    let q = self.bin(Div, q, bv, span);
                    cb = Some(self.bin(Mul, g, q, span));
                }
            }
            Pow => {
                let av = self.forward_value(sweep, a);
                let bv = self.forward_value(sweep, b);
                if wa {
                    // g * b * a^(b - 1)
                    let bm1 = self.bin_c(Sub, bv, 1.0, span);
                    let p = self.bin(Pow, av, bm1, span);
                    let p = self.bin(Mul, bv, p, span);
                    ca = Some(self.bin(Mul, g, p, span));
                }
                if wb {
                    // g * y * log(a) where a > 0, else 0 (TF).
                    let yv = self.forward_value(sweep, y);
                    let pos = self.cmp_c(CmpOp::Gt, av, 0.0, span);
                    let dt = self.graph.node(av).dtype;
                    let one = self.constant(1.0, dt, span);
                    let safe = self.select3(pos, av, one, span);
                    let l = self.un(UnaryOp::Log, safe, span);
                    let zero = self.constant(0.0, dt, span);
                    let l = self.select3(pos, l, zero, span);
                    let gy = self.bin(Mul, g, yv, span);
                    cb = Some(self.bin(Mul, gy, l, span));
                }
            }
            Maximum | Minimum => {
                // To `a` where it was chosen (ties go to `a`, as TF's), else to `b`.
                let av = self.forward_value(sweep, a);
                let bv = self.forward_value(sweep, b);
                let cmp = if op == Maximum { CmpOp::Ge } else { CmpOp::Le };
                let chose_a = self.compare(cmp, av, bv, span);
                if wa {
                    ca = Some(self.mask(chose_a, g, true, span));
                }
                if wb {
                    cb = Some(self.mask(chose_a, g, false, span));
                }
            }
            LeakyRelu => {
                let av = self.forward_value(sweep, a);
                let pos = self.cmp_c(CmpOp::Gt, av, 0.0, span);
                if wa {
                    let alpha = self.forward_value(sweep, b);
                    let ga = self.bin(Mul, g, alpha, span);
                    ca = Some(self.select3(pos, g, ga, span));
                }
                if wb {
                    let gx = self.bin(Mul, g, av, span);
                    cb = Some(self.mask(pos, gx, false, span));
                }
            }
            // Piecewise constant in both operands: no gradient flows (TF registers None).
            TruncateDiv | FloorDiv => {}
            FloorMod | TruncateMod => {
                // a - q * b with q = floor(a / b) (trunc for truncatemod): da = g, db = -g * q.
                ca = wa.then_some(g);
                if wb {
                    let av = self.forward_value(sweep, a);
                    let bv = self.forward_value(sweep, b);
                    let qop = if op == FloorMod {
                        FloorDiv
                    } else {
                        TruncateDiv
                    };
                    let q = self.bin(qop, av, bv, span);
                    let gq = self.bin(Mul, g, q, span);
                    cb = Some(self.un(UnaryOp::Neg, gq, span));
                }
            }
            LogicalAnd | LogicalOr | LogicalXor => {}
        }
        Ok((ca, cb))
    }

    /// The adjoint of `x` for `y = reduce_KIND(x, axes)`.
    fn reduce_rule(
        &mut self,
        sweep: &mut Sweep,
        kind: ReduceKind,
        axes: &[usize],
        y: NodeId,
        x: NodeId,
        g: NodeId,
    ) -> Result<NodeId, String> {
        let span = sweep.span;
        let xn = self.graph.node(x).clone();
        Ok(match kind {
            ReduceKind::Sum => self.broadcast_back(g, axes, &xn.shape, span),
            ReduceKind::Mean => {
                let n = self.count_over(&xn.shape, axes, xn.dtype, span);
                let gn = self.bin(BinaryOp::Div, g, n, span);
                self.broadcast_back(gn, axes, &xn.shape, span)
            }
            ReduceKind::Max | ReduceKind::Min => {
                // Shared equally among the elements equal to the extremum (TF's rule).
                let xv = self.forward_value(sweep, x);
                let yv = self.forward_value(sweep, y);
                let kept: Shape = xn
                    .shape
                    .iter()
                    .enumerate()
                    .map(|(i, d)| {
                        if axes.contains(&i) {
                            Dim::Const(1)
                        } else {
                            d.clone()
                        }
                    })
                    .collect();
                let yk = self.reshape_to(yv, kept.clone(), span);
                let eq = self.compare(CmpOp::Eq, xv, yk, span);
                let ind = self.cast_to(eq, xn.dtype, span);
                let count = self.sum_axes(ind, axes.to_vec(), true, span);
                let gk = self.reshape_to(g, kept, span);
                let share = self.bin(BinaryOp::Div, gk, count, span);
                self.bin(BinaryOp::Mul, ind, share, span)
            }
            ReduceKind::Prod => {
                // TF's rule: g times the product of the other reduced elements, from
                // exclusive cumulative products both ways (right where an element is 0).
                let gk = self.broadcast_back(g, axes, &xn.shape, span);
                let xv = self.forward_value(sweep, x);
                let others = self.product_of_others(xv, axes, span)?;
                self.bin(BinaryOp::Mul, gk, others, span)
            }
        })
    }
}

/// The message for an op on the path from an `x` to `y` that has no gradient rule.
pub(super) fn no_rule(node: &Node) -> String {
    format!(
        "`gradients` cannot differentiate through `{}` (line {}): it has no gradient rule yet (docs/OPS.md lists each op's rule); wrap its result in `stop_gradient(...)` if no gradient should flow through it",
        node.op.name(),
        node.line
    )
}
