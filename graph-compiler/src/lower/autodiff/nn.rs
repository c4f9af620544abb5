//! The gradient rules of the convolutions, pooling and `gather`, and of their gradient ops (so that a gradient of a gradient, and `conv2d_transpose`, differentiate too), TF's registered gradients.
//!
//! - `conv2d` / `depthwise_conv2d` (any stride, padding, dilation): `dx` is the input
//!   gradient op of `g` and the kernel, `dk` the filter gradient op of `x` and `g`.
//! - The input gradient `dx = B(dy, k)` is linear in both: `d dy` is the forward convolution
//!   of its adjoint by `k`, `d k` the filter gradient of (adjoint, `dy`); the filter
//!   gradient `dk = F(x, dy)`: `d x` is the input gradient of (`dy`, adjoint), `d dy` the
//!   convolution of `x` by the adjoint.
//! - Pooling: the pooling gradient op (max: to the first maximum of each window; avg: spread
//!   over the valid elements). The average pooling's gradient is linear in `dy`, its adjoint
//!   the average pooling of `g`; the max pooling's gradient has no rule with respect to `dy`
//!   (TF's `MaxPoolGradGrad`) and none with respect to `x` (piecewise constant).
//! - `gather` with respect to its params: the scatter-add of `g` at the indices; the
//!   scatter-add's own adjoint is the gather of `g`.

use super::super::Lowerer;
use super::rules::no_rule;
use super::Sweep;
use crate::infer;
use crate::ir::*;

/// One convolution's attributes, as the forward op and its two gradient ops share them.
#[derive(Debug, Clone, Copy)]
struct Conv {
    stride: usize,
    dilation: [usize; 2],
    padding: Padding,
    depthwise: bool,
}

impl Conv {
    fn of(op: &Op) -> Option<Conv> {
        Some(match *op {
            Op::Conv2d { stride, padding } => Conv {
                stride,
                dilation: [1, 1],
                padding,
                depthwise: false,
            },
            Op::ConvGeneral {
                stride,
                dilation,
                padding,
                depthwise,
            }
            | Op::Conv2dBackpropInput {
                stride,
                dilation,
                padding,
                depthwise,
            }
            | Op::Conv2dBackpropFilter {
                stride,
                dilation,
                padding,
                depthwise,
            } => Conv {
                stride,
                dilation,
                padding,
                depthwise,
            },
            _ => return None,
        })
    }
}

impl Lowerer<'_> {
    /// The contributions of the backward of `node` (a convolution, a pooling, a gather or one
    /// of their gradient ops) given its adjoint `g`, pushed to `out`.
    pub(super) fn nn_rule(
        &mut self,
        sweep: &mut Sweep,
        node: &Node,
        g: NodeId,
        wants: &dyn Fn(usize) -> bool,
        out: &mut Vec<(NodeId, NodeId)>,
    ) -> Result<(), String> {
        let inputs = &node.inputs;
        let shape = |lw: &Self, i: usize| lw.graph.node(inputs[i]).shape.clone();
        match &node.op {
            Op::Conv2d { .. } | Op::ConvGeneral { .. } => {
                let c = Conv::of(&node.op).expect("a convolution");
                let (x, k) = (inputs[0], inputs[1]);
                if wants(0) {
                    let kv = self.forward_value(sweep, k);
                    let dx = self.conv_backprop_input(c, g, kv, shape(self, 0), sweep);
                    out.push((x, dx));
                }
                if wants(1) {
                    let xv = self.forward_value(sweep, x);
                    let dk = self.conv_backprop_filter(c, xv, g, shape(self, 1), sweep);
                    out.push((k, dk));
                }
            }
            Op::Conv2dBackpropInput { .. } => {
                let c = Conv::of(&node.op).expect("a convolution gradient");
                let (dy, k) = (inputs[0], inputs[1]);
                if wants(0) {
                    let kv = self.forward_value(sweep, k);
                    let d = self.conv_forward(c, g, kv, sweep)?;
                    out.push((dy, d));
                }
                if wants(1) {
                    let dyv = self.forward_value(sweep, dy);
                    let dk = self.conv_backprop_filter(c, g, dyv, shape(self, 1), sweep);
                    out.push((k, dk));
                }
            }
            Op::Conv2dBackpropFilter { .. } => {
                let c = Conv::of(&node.op).expect("a convolution gradient");
                let (x, dy) = (inputs[0], inputs[1]);
                if wants(0) {
                    let dyv = self.forward_value(sweep, dy);
                    let dx = self.conv_backprop_input(c, dyv, g, shape(self, 0), sweep);
                    out.push((x, dx));
                }
                if wants(1) {
                    let xv = self.forward_value(sweep, x);
                    let d = self.conv_forward(c, xv, g, sweep)?;
                    out.push((dy, d));
                }
            }
            &Op::Pool {
                kind,
                ksize,
                strides,
                padding,
            } => {
                if wants(0) {
                    let x = inputs[0];
                    let mut ins = vec![g];
                    if kind == PoolKind::Max {
                        ins.push(self.forward_value(sweep, x));
                    }
                    let op = Op::PoolGrad {
                        kind,
                        ksize,
                        strides,
                        padding,
                    };
                    let n = self.graph.node(x).clone();
                    let dx = self.typed(op, ins, Ok((n.dtype, n.shape)), sweep.span);
                    out.push((x, dx));
                }
            }
            &Op::PoolGrad {
                kind,
                ksize,
                strides,
                padding,
            } => match kind {
                // Linear in `dy`: its adjoint is the average pooling of `g`.
                PoolKind::Avg if wants(0) => {
                    let n = self.graph.node(g).clone();
                    let r = infer::pool2d(kind, (n.dtype, &n.shape), ksize, strides, padding);
                    let op = Op::Pool {
                        kind,
                        ksize,
                        strides,
                        padding,
                    };
                    let d = self.typed(op, vec![g], r, sweep.span);
                    out.push((inputs[0], d));
                }
                PoolKind::Avg => {}
                // Piecewise constant in `x` (no contribution); `g` at each window's selected
                // element with respect to `dy` is TF's `MaxPoolGradGrad`, not here yet.
                PoolKind::Max if wants(0) => return Err(no_rule(node)),
                PoolKind::Max => {}
            },
            Op::Sel(SelOp::Gather { axis }) => {
                if wants(0) {
                    let ind = self.forward_value(sweep, inputs[1]);
                    let n = self.graph.node(inputs[0]).clone();
                    let op = SelOp::GatherGrad { axis: *axis };
                    let d = self.sel(op, vec![g, ind], n.dtype, n.shape, sweep.span);
                    out.push((inputs[0], d));
                }
            }
            Op::Sel(SelOp::GatherGrad { axis }) => {
                if wants(0) {
                    let ind = self.forward_value(sweep, inputs[1]);
                    let n = self.graph.node(inputs[0]).clone();
                    let op = SelOp::Gather { axis: *axis };
                    let d = self.sel(op, vec![g, ind], n.dtype, n.shape, sweep.span);
                    out.push((inputs[0], d));
                }
            }
            _ => unreachable!("`nn_rule` is called for the convolutions, pooling and gather"),
        }
        Ok(())
    }

    /// The input gradient op: `dy` and the kernel `k` to the input's `x_shape`.
    fn conv_backprop_input(
        &mut self,
        c: Conv,
        dy: NodeId,
        k: NodeId,
        x_shape: Shape,
        sweep: &Sweep,
    ) -> NodeId {
        let dt = self.graph.node(dy).dtype;
        let op = Op::Conv2dBackpropInput {
            stride: c.stride,
            dilation: c.dilation,
            padding: c.padding,
            depthwise: c.depthwise,
        };
        self.typed(op, vec![dy, k], Ok((dt, x_shape)), sweep.span)
    }

    /// The filter gradient op: the input `x` and `dy` to the kernel's `k_shape`.
    fn conv_backprop_filter(
        &mut self,
        c: Conv,
        x: NodeId,
        dy: NodeId,
        k_shape: Shape,
        sweep: &Sweep,
    ) -> NodeId {
        let dt = self.graph.node(dy).dtype;
        let op = Op::Conv2dBackpropFilter {
            stride: c.stride,
            dilation: c.dilation,
            padding: c.padding,
            depthwise: c.depthwise,
        };
        self.typed(op, vec![x, dy], Ok((dt, k_shape)), sweep.span)
    }

    /// The forward convolution of `x` by `k` (a plain one on conv.rs's GEMM path when it has
    /// no dilation and is not depthwise, as the lowering of `conv2d` picks).
    fn conv_forward(
        &mut self,
        c: Conv,
        x: NodeId,
        k: NodeId,
        sweep: &Sweep,
    ) -> Result<NodeId, String> {
        let (nx, nk) = (self.graph.node(x).clone(), self.graph.node(k).clone());
        let (sx, sk) = ((nx.dtype, &nx.shape[..]), (nk.dtype, &nk.shape[..]));
        let (op, r) = if !c.depthwise && c.dilation == [1, 1] {
            let op = Op::Conv2d {
                stride: c.stride,
                padding: c.padding,
            };
            (op, infer::conv2d(sx, sk, c.stride, c.padding))
        } else {
            let op = Op::ConvGeneral {
                stride: c.stride,
                dilation: c.dilation,
                padding: c.padding,
                depthwise: c.depthwise,
            };
            let r = infer::conv_general(sx, sk, c.stride, c.dilation, c.padding, c.depthwise);
            (op, r)
        };
        // The shapes come from a graph that passed these rules; a failure is a bug here.
        let r = r.map_err(|e| format!("internal: the gradient's convolution: {e}"))?;
        Ok(self.typed(op, vec![x, k], Ok(r), sweep.span))
    }
}
