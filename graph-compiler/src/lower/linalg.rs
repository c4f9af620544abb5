//! Lowering of linear algebra and shapes: `matmul`, `transpose`, `reshape` and `band_part`.

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

impl Lowerer<'_> {
    /// `band_part(x, num_lower, num_upper)` (TF's `tf.linalg.band_part`) as a composite: `x`
    /// where `(num_lower < 0 || i - j <= num_lower) && (num_upper < 0 || j - i <= num_upper)`
    /// for row `i` and column `j` of its last two axes, else 0; the row and column indices
    /// are `range`s, so the mask and the `select` fuse into one loop and `gradients` masks `g`
    /// through the `select`'s rule.
    pub(super) fn lower_band_part(&mut self, call: &Call) -> NodeId {
        let (args, span) = (call.args, call.span);
        let x = self.operand(args[0]);
        let x = self.concrete(x);
        let n = self.graph.node(x).clone();
        // The row's kind checks accepted integer literals.
        let lower = self.literal_int(args[1]).unwrap_or(-1);
        let upper = self.literal_int(args[2]).unwrap_or(-1);
        if n.poisoned {
            return self.poisoned(span);
        }
        let rank = n.shape.len();
        if rank < 2 {
            let msg = format!(
                "`band_part` needs a matrix or a batch of matrices (rank 2 or more), found {}",
                type_str(n.dtype, &n.shape)
            );
            self.diag.error(args[0].span(), msg);
            return self.poisoned(span);
        }
        if lower < 0 && upper < 0 {
            return x;
        }
        let (rows, cols) = (n.shape[rank - 2].clone(), n.shape[rank - 1].clone());
        let index = |this: &mut Self, d: Dim, shape: Shape| {
            let op = SelOp::Range {
                start: Scalar::Int(0),
                delta: Scalar::Int(1),
            };
            let r = this.sel(op, vec![], DType::I64, vec![d], span);
            this.reshape_to(r, shape, span)
        };
        let i = index(self, rows.clone(), vec![rows, Dim::Const(1)]);
        let j = index(self, cols.clone(), vec![Dim::Const(1), cols]);
        // i - j: how far below the diagonal.
        let below = self.bin(BinaryOp::Sub, i, j, span);
        let mut keep = None;
        if lower >= 0 {
            keep = Some(self.cmp_c(CmpOp::Le, below, lower as f64, span));
        }
        if upper >= 0 {
            let above = self.cmp_c(CmpOp::Ge, below, -(upper as f64), span);
            keep = Some(match keep {
                Some(k) => self.bin(BinaryOp::LogicalAnd, k, above, span),
                None => above,
            });
        }
        let keep = keep.expect("one bound is non-negative");
        let zero = self.push(
            Op::Const {
                value: Scalar::Int(0).convert(n.dtype),
                weak: false,
            },
            vec![],
            n.dtype,
            vec![],
            span,
        );
        self.select3(keep, x, zero, span)
    }
}
