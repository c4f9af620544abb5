//! Lowering of the reductions: `reduce_sum`, `reduce_mean`, `reduce_max`, `reduce_min`,
//! `reduce_prod`, `reduce_any`/`reduce_all` (a max or min of the bools as i32), `norm`, and the
//! ops along an axis: `cumsum` and `top_k`.

use super::{Call, Lowerer, Value};
use crate::infer;
use crate::ir::*;
use syn::Expr;

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

    /// The axes of a reduction call (all by default) and its `keep_dims`, or `None` after
    /// reporting a malformed list.
    fn reduction_axes(&mut self, args: &[&Expr], rank: usize) -> Option<(Vec<i64>, bool)> {
        let axes = match args.get(1) {
            None => (0..rank as i64).collect(),
            Some(a) => self.int_list(a)?,
        };
        // The row's kind check accepted only `true` or `false`.
        let keep = args
            .get(2)
            .and_then(|e| self.host_literal_bool(e))
            .unwrap_or(false);
        Some((axes, keep))
    }

    /// `reduce_any(x [, axes [, keep_dims]])` (`any`) and `reduce_all` of a bool tensor: the
    /// bools as i32, their max (any) or min (all) over the axes, `> 0`. An empty `any` is
    /// false (the max of nothing is `i32::MIN`), an empty `all` true.
    pub(super) fn lower_reduce_bool(&mut self, any: bool, call: &Call) -> NodeId {
        let (args, span, name) = (call.args, call.span, call.name);
        let x = self.operand(args[0]);
        let x = self.concrete(x);
        let n = self.graph.node(x).clone();
        let Some((axes_raw, keep)) = self.reduction_axes(args, n.shape.len()) else {
            return self.poisoned(span);
        };
        if n.poisoned {
            return self.poisoned(span);
        }
        if let Err(msg) = infer::unary_of(name, OperandKind::Bool, (n.dtype, &n.shape)) {
            self.diag.error(args[0].span(), msg);
            return self.poisoned(span);
        }
        let ints = self.cast_to(x, DType::I32, span);
        let kind = if any {
            ReduceKind::Max
        } else {
            ReduceKind::Min
        };
        let r = infer::normalize_axes(name, &axes_raw, n.shape.len(), &n.shape).and_then(|axes| {
            infer::reduce(name, (DType::I32, &n.shape), &axes, keep).map(|t| (axes, t))
        });
        let make = |axes| Op::Reduce {
            kind,
            axes,
            keep_dims: keep,
        };
        let error_span = args.get(1).map_or(span, |a| a.span());
        let reduced = self.typed_with(vec![ints], r, make, error_span, span);
        let zero = self.constant(0.0, DType::I32, span);
        self.compare(CmpOp::Gt, reduced, zero, span)
    }

    /// `cumsum(x, axis [, exclusive [, reverse]])`, TensorFlow's running sums.
    pub(super) fn lower_cumsum(&mut self, call: &Call) -> NodeId {
        let (args, span) = (call.args, call.span);
        let x = self.operand(args[0]);
        let x = self.concrete(x);
        let n = self.graph.node(x).clone();
        // The row's kind checks accepted an integer axis and `true` or `false` flags.
        let flag = |this: &Self, k: usize| {
            args.get(k)
                .and_then(|e| this.host_literal_bool(e))
                .unwrap_or(false)
        };
        let (exclusive, reverse) = (flag(self, 2), flag(self, 3));
        let axis = self.literal_int(args[1]).unwrap_or(0);
        if n.poisoned {
            return self.poisoned(span);
        }
        if let Err(msg) = infer::unary("cumsum", false, (n.dtype, &n.shape)) {
            self.diag.error(args[0].span(), msg);
            return self.poisoned(span);
        }
        let axis = match infer::normalize_axes("cumsum", &[axis], n.shape.len(), &n.shape) {
            Ok(a) => a[0],
            Err(msg) => {
                self.diag.error(args[1].span(), msg);
                return self.poisoned(span);
            }
        };
        self.cumulative(x, axis, exclusive, reverse, false, span)
    }

    /// `top_k(x, k)`: the tuple `(values, indices)` of the `k` largest elements of each row
    /// of the last axis, in order (TF's `tf.math.top_k`, i32 indices). `k` above a static last
    /// axis is an error here, above a symbolic one an `Err` when the function runs.
    pub(super) fn lower_top_k(&mut self, call: &Call) -> Value {
        let (args, span) = (call.args, call.span);
        let x = self.operand(args[0]);
        let x = self.concrete(x);
        let n = self.graph.node(x).clone();
        let k = self.literal_int(args[1]).unwrap_or(0);
        match self.top_k_shape(&n, k, args) {
            Some(shape) => {
                let indices = self.sel(
                    SelOp::TopK { k: k as u64 },
                    vec![x],
                    DType::I32,
                    shape.clone(),
                    span,
                );
                let values = self.sel(SelOp::TakeAlongLast, vec![x, indices], n.dtype, shape, span);
                Value::Tuple(vec![Value::Tensor(values), Value::Tensor(indices)])
            }
            None => {
                // Both results poisoned: a mistake here is reported once, not at their uses.
                let (a, b) = (self.poisoned(span), self.poisoned(span));
                Value::Tuple(vec![Value::Tensor(a), Value::Tensor(b)])
            }
        }
    }

    /// The shape of `top_k`'s results (`x`'s with the last axis `k`), or `None` after reporting why not.
    fn top_k_shape(&mut self, n: &Node, k: i64, args: &[&Expr]) -> Option<Shape> {
        if n.poisoned {
            return None;
        }
        let what = type_str(n.dtype, &n.shape);
        let msg = if n.dtype == DType::Bool {
            format!("`top_k` needs a number, found {what}")
        } else if n.shape.is_empty() {
            format!(
                "`top_k` needs a tensor of rank 1 or more (it ranks the last axis), found {what}"
            )
        } else if k < 0 {
            format!("`top_k`'s `k` must be non-negative, found {k}")
        } else {
            match n.shape.last() {
                Some(Dim::Const(last)) if k as u64 > *last => format!(
                    "`top_k`'s `k` ({k}) is larger than the last axis of `x` {what} ({last})"
                ),
                _ => {
                    let mut shape = n.shape.clone();
                    *shape.last_mut().expect("rank 1 or more") = Dim::Const(k as u64);
                    return Some(shape);
                }
            }
        };
        let at = if n.dtype == DType::Bool || n.shape.is_empty() {
            args[0].span()
        } else {
            args[1].span()
        };
        self.diag.error(at, msg);
        None
    }
}
