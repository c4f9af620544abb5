//! The gradient rules of the selection, layout and scan ops: slicing, concatenation, tiling and
//! padding scatter or gather the adjoint back; `cumsum`, `cumprod`, `top_k` and `resize` have
//! their own (the other ops' rules are in `rules.rs`, the convolutions' and pooling's in `nn.rs`).

use super::super::{Lowerer, Span};
use super::rules::Contributions;
use super::Sweep;
use crate::ir::*;

impl Lowerer<'_> {
    /// Slicing, concatenation, tiling and padding: the adjoint is scattered (padded) or
    /// gathered (sliced) back and summed; the ops without a float operand carry none.
    pub(super) fn selection_rule(
        &mut self,
        sel: &SelOp,
        node: &Node,
        g: NodeId,
        wants: &dyn Fn(usize) -> bool,
        out: &mut Contributions,
        span: Span,
    ) -> Result<(), String> {
        let inputs = &node.inputs;
        match sel {
            SelOp::Slice { name, axes } => {
                if !wants(0) {
                    return Ok(());
                }
                let xs = self.graph.node(inputs[0]).shape.clone();
                let gs = self.graph.node(g).shape.clone();
                let mut with_axes = Vec::new();
                let mut j = 0;
                let mut paddings = Vec::new();
                for (i, spec) in axes.iter().enumerate() {
                    let len = match &xs[i] {
                        Dim::Const(n) => Some(*n as i64),
                        _ => None,
                    };
                    let full = matches!(
                        spec,
                        SliceSpec::Range {
                            start: 0,
                            end: None,
                            step: 1
                        }
                    );
                    let unsupported = || {
                        format!(
                            "`gradients` cannot differentiate `{name}` (line {}) on axis {i}: its gradient rule needs a static axis or a whole-axis range, and a step of 1",
                            node.line
                        )
                    };
                    let (before, count) = match (*spec, len) {
                        (SliceSpec::Index(k), Some(l)) => (if k < 0 { k + l } else { k }, 1),
                        (SliceSpec::Range { .. }, _) if full => (0, -1),
                        (
                            SliceSpec::Range {
                                start,
                                end,
                                step: 1,
                            },
                            Some(l),
                        ) => {
                            let s = if start < 0 { start + l } else { start };
                            let e = end.map_or(l, |e| if e < 0 { e + l } else { e });
                            (s, (e - s).max(0))
                        }
                        (
                            SliceSpec::Strided {
                                begin,
                                end,
                                stride: 1,
                            },
                            Some(l),
                        ) => {
                            let clamp = |v: i64| if v < 0 { (v + l).max(0) } else { v.min(l) };
                            let (b, e) = (clamp(begin), clamp(end));
                            (b, (e - b).max(0))
                        }
                        _ => return Err(unsupported()),
                    };
                    match spec {
                        SliceSpec::Index(_) | SliceSpec::IndexInput(_) => {
                            with_axes.push(Dim::Const(1))
                        }
                        _ => {
                            with_axes.push(gs[j].clone());
                            j += 1;
                        }
                    }
                    if count < 0 {
                        paddings.push((0, 0));
                    } else {
                        let l = len.unwrap_or(0);
                        paddings.push((before as u64, (l - before - count).max(0) as u64));
                    }
                }
                let g1 = self.reshape_to(g, with_axes, span);
                let c = self.pad_zeros(g1, paddings, xs, span);
                out.push((inputs[0], c));
            }
            SelOp::Concat { name, axis } => {
                let mut offset: Option<i64> = Some(0);
                for (k, &inp) in inputs.iter().enumerate() {
                    let d = self.graph.node(inp).shape[*axis].clone();
                    let last = k + 1 == inputs.len();
                    if wants(k) {
                        let Some(off) = offset else {
                            return Err(format!(
                                "`gradients` cannot differentiate `{name}` (line {}): an operand before operand {k} has a symbolic size along the axis",
                                node.line
                            ));
                        };
                        let end = match (&d, last) {
                            (_, true) => None,
                            (Dim::Const(n), false) => Some(off + *n as i64),
                            _ => {
                                return Err(format!(
                                    "`gradients` cannot differentiate `{name}` (line {}): operand {k} has a symbolic size along the axis",
                                    node.line
                                ))
                            }
                        };
                        let c = self.slice_axis(g, *axis, off, end, d.clone(), span);
                        out.push((inp, c));
                    }
                    offset = match (offset, &d) {
                        (Some(o), Dim::Const(n)) => Some(o + *n as i64),
                        _ => None,
                    };
                }
            }
            SelOp::Tile { multiples } => {
                if wants(0) {
                    let xs = self.graph.node(inputs[0]).shape.clone();
                    let mut split = Vec::new();
                    let mut axes = Vec::new();
                    for (i, d) in xs.iter().enumerate() {
                        axes.push(split.len());
                        split.push(Dim::Const(multiples[i]));
                        split.push(d.clone());
                    }
                    let g2 = self.reshape_to(g, split, span);
                    let c = self.sum_axes(g2, axes, false, span);
                    out.push((inputs[0], c));
                }
            }
            SelOp::Pad { paddings } => {
                let xs = self.graph.node(inputs[0]).shape.clone();
                let mut gx = g;
                for (axis, &(before, after)) in paddings.iter().enumerate() {
                    if before == 0 && after == 0 {
                        continue;
                    }
                    let end = (after > 0).then_some(-(after as i64));
                    gx = self.slice_axis(gx, axis, before as i64, end, xs[axis].clone(), span);
                }
                if wants(0) {
                    out.push((inputs[0], gx));
                }
                if wants(1) {
                    // The fill value is every padded element: the sum of g outside x.
                    let all = self.sum_all(g, span);
                    let inner = self.sum_all(gx, span);
                    let c = self.bin(BinaryOp::Sub, all, inner, span);
                    out.push((inputs[1], c));
                }
            }
            SelOp::Gather { .. } | SelOp::GatherGrad { .. } => {
                unreachable!("`nn_rule` differentiates them")
            }
            SelOp::OneHot { .. }
            | SelOp::ArgReduce { .. }
            | SelOp::Range { .. }
            | SelOp::Values { .. } => {}
            SelOp::Cumulative { .. }
            | SelOp::TopK { .. }
            | SelOp::TakeAlongLast
            | SelOp::ScatterAlongLast
            | SelOp::Resize { .. }
            | SelOp::ResizeGrad { .. } => unreachable!("`scan_rule` differentiates them"),
        }
        Ok(())
    }
}

impl Lowerer<'_> {
    /// The running totals, `top_k` and `resize`: `cumsum`'s adjoint is the reverse `cumsum` of
    /// `g`; `cumprod`'s is TF's (`cumsum(y * g)` reversed, over `x`, 0 where `x` is 0); `top_k`'s
    /// values (a gather along the last axis) scatter `g` back to the indices, and that
    /// scatter's adjoint gathers again (the indices carry none); `resize` is linear in the
    /// images, its adjoint the runtime's `resize_grad` (TF's `ResizeBilinearGrad` and
    /// `ResizeNearestNeighborGrad`), whose adjoint is the resize again.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn scan_rule(
        &mut self,
        sweep: &mut Sweep,
        sel: &SelOp,
        node: &Node,
        y: NodeId,
        g: NodeId,
        wants: &dyn Fn(usize) -> bool,
        out: &mut Contributions,
    ) -> Result<(), String> {
        let span = sweep.span;
        let inputs = &node.inputs;
        if !wants(0) {
            return Ok(());
        }
        let c = match *sel {
            SelOp::Cumulative {
                axis,
                exclusive,
                reverse,
                prod: false,
            } => self.cumulative(g, axis, exclusive, !reverse, false, span),
            SelOp::Cumulative {
                axis,
                exclusive,
                reverse,
                prod: true,
            } => {
                let x = self.forward_value(sweep, inputs[0]);
                let yv = self.forward_value(sweep, y);
                let yg = self.bin(BinaryOp::Mul, yv, g, span);
                let s = self.cumulative(yg, axis, exclusive, !reverse, false, span);
                // TF's `div_no_nan`.
                let q = self.bin(BinaryOp::Div, s, x, span);
                let zero = self.cmp_c(CmpOp::Eq, x, 0.0, span);
                self.mask(zero, q, false, span)
            }
            SelOp::TakeAlongLast => {
                let ind = self.forward_value(sweep, inputs[1]);
                let shape = self.graph.node(inputs[0]).shape.clone();
                let dt = self.graph.node(g).dtype;
                self.sel(SelOp::ScatterAlongLast, vec![g, ind], dt, shape, span)
            }
            SelOp::ScatterAlongLast => {
                let ind = self.forward_value(sweep, inputs[1]);
                let shape = self.graph.node(ind).shape.clone();
                let dt = self.graph.node(g).dtype;
                self.sel(SelOp::TakeAlongLast, vec![g, ind], dt, shape, span)
            }
            SelOp::Resize { method } => {
                let x = self.graph.node(inputs[0]).clone();
                let op = SelOp::ResizeGrad { method };
                self.sel(op, vec![g], x.dtype, x.shape, span)
            }
            SelOp::ResizeGrad { method } => {
                let resized = self.graph.node(inputs[0]).clone();
                let (dt, shape) = (resized.dtype, resized.shape);
                self.sel(SelOp::Resize { method }, vec![g], dt, shape, span)
            }
            _ => return Ok(()),
        };
        out.push((inputs[0], c));
        Ok(())
    }

    /// `cumsum(x, axis, exclusive, reverse)`, or `cumprod` when `prod`.
    pub(in crate::lower) fn cumulative(
        &mut self,
        x: NodeId,
        axis: usize,
        exclusive: bool,
        reverse: bool,
        prod: bool,
        span: Span,
    ) -> NodeId {
        let n = self.graph.node(x).clone();
        let op = SelOp::Cumulative {
            axis,
            exclusive,
            reverse,
            prod,
        };
        self.sel(op, vec![x], n.dtype, n.shape, span)
    }

    /// For each element of `x`, the product of the other elements of its reduction over `axes`
    /// (TF's `_ProdGrad`): the reduced axes moved first and flattened, then the product of
    /// exclusive cumulative products from both ends, moved back.
    pub(super) fn product_of_others(
        &mut self,
        x: NodeId,
        axes: &[usize],
        span: Span,
    ) -> Result<NodeId, String> {
        let xn = self.graph.node(x).clone();
        if let [axis] = *axes {
            let left = self.cumulative(x, axis, true, false, true, span);
            let right = self.cumulative(x, axis, true, true, true, span);
            return Ok(self.bin(BinaryOp::Mul, left, right, span));
        }
        let rank = xn.shape.len();
        let mut perm = axes.to_vec();
        perm.extend((0..rank).filter(|a| !axes.contains(a)));
        let identity = perm.iter().enumerate().all(|(i, &p)| i == p);
        let moved = if identity {
            x
        } else {
            self.transpose_by(x, perm.clone(), span)
        };
        let moved_shape = self.graph.node(moved).shape.clone();
        let product = |dims: &[Dim]| {
            dims.iter()
                .try_fold(Dim::Const(1), |acc, d| acc.times(d))
                .ok_or_else(|| {
                    format!(
                        "`gradients` cannot differentiate `reduce_prod` (line {}): its input {} has more elements than fit in 64 bits",
                        xn.line,
                        shape_str(&xn.shape)
                    )
                })
        };
        let flat = vec![
            product(&moved_shape[..axes.len()])?,
            product(&moved_shape[axes.len()..])?,
        ];
        let rows = self.reshape_to(moved, flat, span);
        let left = self.cumulative(rows, 0, true, false, true, span);
        let right = self.cumulative(rows, 0, true, true, true, span);
        let others = self.bin(BinaryOp::Mul, left, right, span);
        let others = self.reshape_to(others, moved_shape, span);
        if identity {
            return Ok(others);
        }
        let mut inverse = vec![0; rank];
        for (i, &p) in perm.iter().enumerate() {
            inverse[p] = i;
        }
        Ok(self.transpose_by(others, inverse, span))
    }
}
