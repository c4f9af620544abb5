//! Node builders the composite lowerings (losses, optimizers) and the gradient rules are written with: constants, fills, typed unary and
//! binary nodes, reductions, views, products, and the broadcasting adjustments.

use super::{Lowerer, Span};
use crate::infer;
use crate::ir::*;

impl Lowerer<'_> {
    /// A (non-weak) scalar constant of `dtype`.
    pub(in crate::lower) fn constant(&mut self, v: f64, dtype: DType, span: Span) -> NodeId {
        self.push(
            Op::Const {
                value: Scalar::Float(v).convert(dtype),
                weak: false,
            },
            vec![],
            dtype,
            vec![],
            span,
        )
    }

    /// A tensor of `shape` filled with the scalar node `value`.
    pub(in crate::lower) fn fill(&mut self, value: NodeId, shape: Shape, span: Span) -> NodeId {
        let dt = self.graph.node(value).dtype;
        self.push(Op::Fill, vec![value], dt, shape, span)
    }

    /// Zeros of `dtype` and `shape` (a scalar constant for rank 0).
    pub(in crate::lower) fn zeros(&mut self, dtype: DType, shape: Shape, span: Span) -> NodeId {
        let zero = self.constant(0.0, dtype, span);
        if shape.is_empty() {
            zero
        } else {
            self.fill(zero, shape, span)
        }
    }

    /// `u(x)`.
    pub(in crate::lower) fn un(&mut self, u: UnaryOp, x: NodeId, span: Span) -> NodeId {
        let n = self.graph.node(x).clone();
        let r = infer::unary_of(u.name(), u.operand_kind(), (n.dtype, &n.shape));
        self.typed(Op::Unary(u), vec![x], r, span)
    }

    /// `a op b` with broadcasting.
    pub(in crate::lower) fn bin(
        &mut self,
        op: BinaryOp,
        a: NodeId,
        b: NodeId,
        span: Span,
    ) -> NodeId {
        self.binary(op, a, b, span)
    }

    /// `a op b` with a scalar constant `b` of `a`'s dtype.
    pub(in crate::lower) fn bin_c(
        &mut self,
        op: BinaryOp,
        a: NodeId,
        v: f64,
        span: Span,
    ) -> NodeId {
        let dt = self.graph.node(a).dtype;
        let c = self.constant(v, dt, span);
        self.binary(op, a, c, span)
    }

    /// `a cmp v` against a scalar constant of `a`'s dtype.
    pub(in crate::lower) fn cmp_c(&mut self, op: CmpOp, a: NodeId, v: f64, span: Span) -> NodeId {
        let dt = self.graph.node(a).dtype;
        let c = self.constant(v, dt, span);
        self.compare(op, a, c, span)
    }

    /// `select(c, a, b)` with broadcasting.
    pub(in crate::lower) fn select3(
        &mut self,
        c: NodeId,
        a: NodeId,
        b: NodeId,
        span: Span,
    ) -> NodeId {
        let (nc, na, nb) = (
            self.graph.node(c).clone(),
            self.graph.node(a).clone(),
            self.graph.node(b).clone(),
        );
        let r = infer::select(
            (nc.dtype, &nc.shape),
            (na.dtype, &na.shape),
            (nb.dtype, &nb.shape),
        );
        self.typed(Op::Select, vec![c, a, b], r, span)
    }

    /// `select(c, g, 0)` (or `select(c, 0, g)` when `!keep_where_true`).
    pub(in crate::lower) fn mask(
        &mut self,
        c: NodeId,
        g: NodeId,
        keep_where_true: bool,
        span: Span,
    ) -> NodeId {
        let dt = self.graph.node(g).dtype;
        let zero = self.constant(0.0, dt, span);
        if keep_where_true {
            self.select3(c, g, zero, span)
        } else {
            self.select3(c, zero, g, span)
        }
    }

    /// `cast::<dtype>(x)`.
    pub(in crate::lower) fn cast_to(&mut self, x: NodeId, dtype: DType, span: Span) -> NodeId {
        let shape = self.graph.node(x).shape.clone();
        self.typed(Op::Cast, vec![x], Ok((dtype, shape)), span)
    }

    /// `reduce_sum(x, axes, keep_dims)` (`x` itself when there are no axes).
    pub(in crate::lower) fn sum_axes(
        &mut self,
        x: NodeId,
        axes: Vec<usize>,
        keep: bool,
        span: Span,
    ) -> NodeId {
        if axes.is_empty() {
            return x;
        }
        let n = self.graph.node(x).clone();
        let r = infer::reduce("reduce_sum", (n.dtype, &n.shape), &axes, keep);
        self.typed(
            Op::Reduce {
                kind: ReduceKind::Sum,
                axes,
                keep_dims: keep,
            },
            vec![x],
            r,
            span,
        )
    }

    /// The sum of every element of `x`, a scalar.
    pub(in crate::lower) fn sum_all(&mut self, x: NodeId, span: Span) -> NodeId {
        let rank = self.graph.node(x).shape.len();
        self.sum_axes(x, (0..rank).collect(), false, span)
    }

    /// A `reshape` of `x` to `shape` (`x` itself when the shape is already that).
    pub(in crate::lower) fn reshape_to(&mut self, x: NodeId, shape: Shape, span: Span) -> NodeId {
        let n = self.graph.node(x).clone();
        if n.shape == shape {
            return x;
        }
        self.typed(Op::Reshape, vec![x], Ok((n.dtype, shape)), span)
    }

    /// `transpose(x, perm)`.
    pub(in crate::lower) fn transpose_by(
        &mut self,
        x: NodeId,
        perm: Vec<usize>,
        span: Span,
    ) -> NodeId {
        let n = self.graph.node(x).clone();
        let r = infer::transpose(&n.shape, &perm).map(|s| (n.dtype, s));
        self.typed(Op::Transpose { perm }, vec![x], r, span)
    }

    /// `matmul(op(a), op(b))`, `op` transposing the last two axes where asked, read in place.
    pub(in crate::lower) fn matmul_t(
        &mut self,
        a: NodeId,
        ta: bool,
        b: NodeId,
        tb: bool,
        span: Span,
    ) -> NodeId {
        let (na, nb) = (self.graph.node(a).clone(), self.graph.node(b).clone());
        let logical = |s: &Shape, t: bool| {
            let mut s = s.clone();
            let r = s.len();
            if t && r >= 2 {
                s.swap(r - 1, r - 2);
            }
            s
        };
        let (sa, sb) = (logical(&na.shape, ta), logical(&nb.shape, tb));
        let r = infer::matmul((na.dtype, &sa), (nb.dtype, &sb));
        self.typed(
            Op::MatMul {
                transpose_a: ta,
                transpose_b: tb,
            },
            vec![a, b],
            r,
            span,
        )
    }

    /// `g` (of a broadcast result's shape) summed back to `shape`: over the leading axes the
    /// operand lacked and over its size-1 axes that were stretched (TF's `BroadcastGradientArgs`).
    pub(in crate::lower) fn unbroadcast(&mut self, g: NodeId, shape: &[Dim], span: Span) -> NodeId {
        let gs = self.graph.node(g).shape.clone();
        if gs.as_slice() == shape {
            return g;
        }
        let lead = gs.len() - shape.len().min(gs.len());
        let mut axes: Vec<usize> = (0..lead).collect();
        for (i, d) in shape.iter().enumerate() {
            if *d == Dim::Const(1) && gs[lead + i] != Dim::Const(1) {
                axes.push(lead + i);
            }
        }
        let summed = self.sum_axes(g, axes, false, span);
        self.reshape_to(summed, shape.to_vec(), span)
    }

    /// `g` (of a reduction's result) as a tensor of `shape`: its reduced `axes` put back with
    /// size 1, then broadcast by a product with ones (exact for every value, -0 and NaN included).
    pub(in crate::lower) fn broadcast_back(
        &mut self,
        g: NodeId,
        axes: &[usize],
        shape: &[Dim],
        span: Span,
    ) -> NodeId {
        let kept: Shape = shape
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
        let g = self.reshape_to(g, kept.clone(), span);
        if kept.as_slice() == shape {
            return g;
        }
        let dt = self.graph.node(g).dtype;
        let one = self.constant(1.0, dt, span);
        let ones = self.fill(one, shape.to_vec(), span);
        self.bin(BinaryOp::Mul, g, ones, span)
    }

    /// The number of elements over `axes` of `shape`, as a scalar of `dtype` (a constant when
    /// they are static, else the sum of a fill of ones over just those dims).
    pub(in crate::lower) fn count_over(
        &mut self,
        shape: &[Dim],
        axes: &[usize],
        dtype: DType,
        span: Span,
    ) -> NodeId {
        let dims: Shape = axes.iter().map(|&a| shape[a].clone()).collect();
        let mut total: Option<u64> = Some(1);
        for d in &dims {
            total = match (total, d) {
                (Some(t), Dim::Const(n)) => t.checked_mul(*n),
                _ => None,
            };
        }
        match total {
            Some(t) => self.constant(t as f64, dtype, span),
            None => {
                let one = self.constant(1.0, dtype, span);
                let ones = self.fill(one, dims, span);
                self.sum_all(ones, span)
            }
        }
    }

    /// A selection node (slice, pad, concat) typed as given.
    pub(in crate::lower) fn sel(
        &mut self,
        op: SelOp,
        inputs: Vec<NodeId>,
        dtype: DType,
        shape: Shape,
        span: Span,
    ) -> NodeId {
        if self.is_poisoned(&inputs) {
            return self.poisoned(span);
        }
        self.push(Op::Sel(op), inputs, dtype, shape, span)
    }

    /// `pad(g, paddings)` with zeros, to `shape`.
    pub(in crate::lower) fn pad_zeros(
        &mut self,
        g: NodeId,
        paddings: Vec<(u64, u64)>,
        shape: Shape,
        span: Span,
    ) -> NodeId {
        if paddings.iter().all(|&(a, b)| a == 0 && b == 0) {
            return g;
        }
        let dt = self.graph.node(g).dtype;
        let zero = self.constant(0.0, dt, span);
        self.sel(SelOp::Pad { paddings }, vec![g, zero], dt, shape, span)
    }

    /// `g[.., start..end, ..]` along `axis` (`end` counting from the end when negative, `None` for all).
    pub(in crate::lower) fn slice_axis(
        &mut self,
        g: NodeId,
        axis: usize,
        start: i64,
        end: Option<i64>,
        out_dim: Dim,
        span: Span,
    ) -> NodeId {
        let n = self.graph.node(g).clone();
        let axes: Vec<SliceSpec> = (0..n.shape.len())
            .map(|i| {
                if i == axis {
                    SliceSpec::Range {
                        start,
                        end,
                        step: 1,
                    }
                } else {
                    SliceSpec::Range {
                        start: 0,
                        end: None,
                        step: 1,
                    }
                }
            })
            .collect();
        let mut shape = n.shape.clone();
        shape[axis] = out_dim;
        self.sel(
            SelOp::Slice {
                name: "slice",
                axes,
            },
            vec![g],
            n.dtype,
            shape,
            span,
        )
    }
}
