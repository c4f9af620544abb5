//! Lowering of linear algebra and shapes: `matmul`, `transpose` and `reshape`.

use super::{Call, Lowerer};
use crate::infer;
use crate::ir::*;

impl Lowerer<'_> {
    /// `matmul(a, b)`.
    pub(super) fn lower_matmul(&mut self, call: &Call) -> NodeId {
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
    pub(super) fn lower_transpose(&mut self, call: &Call) -> NodeId {
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
    pub(super) fn lower_reshape(&mut self, call: &Call) -> NodeId {
        let x = self.operand(call.args[0]);
        let Some(target) = self.dim_list(call.args[1], true) else {
            return self.poisoned(call.span);
        };
        let n = self.graph.node(x).clone();
        let r = infer::reshape(&n.shape, &target).map(|s| (n.dtype, s));
        self.typed(Op::Reshape, vec![x], r, call.span)
    }
}
