//! Lowering of the reductions: `reduce_sum`, `reduce_mean`, `reduce_max`, `reduce_min` and `norm`.

use super::{Call, Lowerer};
use crate::infer;
use crate::ir::*;

impl Lowerer<'_> {
    /// `reduce_sum(x [, axis or [axes] [, keep_dims]])` and its siblings.
    pub(super) fn lower_reduce(&mut self, kind: ReduceKind, call: &Call) -> NodeId {
        let (args, span) = (call.args, call.span);
        let x = self.operand(args[0]);
        let x = self.concrete(x);
        let n = self.graph.node(x).clone();
        let axes_raw: Vec<i64> = match args.get(1) {
            None => (0..n.shape.len() as i64).collect(),
            Some(a) => match self.int_list(a) {
                Some(v) => v,
                None => return self.poisoned(span),
            },
        };
        // The row's kind check accepted only `true` or `false`.
        let keep = args
            .get(2)
            .and_then(|e| self.host_literal_bool(e))
            .unwrap_or(false);
        if n.poisoned {
            return self.poisoned(span);
        }
        let r = infer::normalize_axes(kind.name(), &axes_raw, n.shape.len(), &n.shape).and_then(
            |axes| infer::reduce(kind.name(), (n.dtype, &n.shape), &axes, keep).map(|t| (axes, t)),
        );
        let make = |axes| Op::Reduce {
            kind,
            axes,
            keep_dims: keep,
        };
        let error_span = args.get(1).map_or(span, |a| a.span());
        self.typed_with(vec![x], r, make, error_span, span)
    }

    /// `norm(x)`, the L2 norm over all axes.
    pub(super) fn lower_norm(&mut self, call: &Call) -> NodeId {
        let x = self.operand(call.args[0]);
        let n = self.graph.node(x).clone();
        let r = infer::unary("norm", true, (n.dtype, &n.shape)).map(|(dt, _)| (dt, vec![]));
        self.typed(Op::Norm, vec![x], r, call.span)
    }
}
