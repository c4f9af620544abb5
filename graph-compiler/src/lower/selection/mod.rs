//! Lowering of the selection and assembly ops, each with its shape rule: indexing with
//! ndarray's `s![..]`, `slice`, `strided_slice`, `concat`, `stack`, `split`, `tile`, `pad`,
//! `expand_dims`, `squeeze`, `gather`, `one_hot`, `argmax`/`argmin` and `range`.
//!
//! Static bounds are checked here (an index out of range is an error at the index); bounds
//! on a symbolic dim are allowed when the result's size does not depend on the symbol, and
//! the kernel checks them against the run-time size (an `Err`, never a panic).
//!
//! The ops live by concern: `index.rs` (`s![..]`), `slice.rs` (`slice`, `strided_slice` and the
//! shape of a slice), `assembly.rs` (concat, stack, split, tile, pad, expand_dims, squeeze) and
//! `gather.rs` (gather, one_hot, argmax/argmin, range); this file holds the helpers they
//! share, the dispatch of a selection call and the `graph()` attributes of a selection node.

use super::{Call, Lowerer, Span, Value};
use crate::ir::*;
use crate::ops::Selection;
use syn::Expr;

mod assembly;
mod gather;
mod index;
mod slice;

impl Lowerer<'_> {
    /// A node for selection op `op` unless an input is poisoned.
    fn sel_node(
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

    /// A `reshape` view of `x` to `shape` (`expand_dims`, `squeeze`, `stack`'s new axis).
    /// `x` (of `shape`) with axes of size 1 inserted at `new_axes` (positions in the result,
    /// ascending): ndarray's `NewAxis` and TF's `new_axis_mask`. A view; `x` itself when there
    /// are none.
    fn with_new_axes(&mut self, x: NodeId, shape: Shape, new_axes: &[usize], span: Span) -> NodeId {
        if new_axes.is_empty() {
            return x;
        }
        let mut with_new = shape;
        for &at in new_axes {
            with_new.insert(at, Dim::Const(1));
        }
        self.view_as(x, with_new, span)
    }

    fn view_as(&mut self, x: NodeId, shape: Shape, span: Span) -> NodeId {
        if self.is_poisoned(&[x]) {
            return self.poisoned(span);
        }
        let dt = self.graph.node(x).dtype;
        self.push(Op::Reshape, vec![x], dt, shape, span)
    }

    fn sel_error(&mut self, at: Span, msg: impl Into<String>, span: Span) -> Value {
        self.diag.error(at, msg.into());
        Value::Tensor(self.poisoned(span))
    }

    /// An operand as a concrete (non-weak) tensor node with its node.
    fn sel_operand(&mut self, e: &Expr) -> (NodeId, Node) {
        let x = self.operand(e);
        let x = self.concrete(x);
        (x, self.graph.node(x).clone())
    }

    /// An axis literal in `-rank..rank` (`-rank-1..=rank` where a new axis is inserted).
    fn sel_axis(&mut self, op: &str, e: &Expr, rank: usize) -> Option<usize> {
        let Some(a) = self.literal_int(e) else {
            self.diag
                .error(e.span(), format!("`{op}` axis must be an integer literal"));
            return None;
        };
        let r = rank as i64;
        if a < -r || a >= r {
            let msg = if rank == 0 {
                format!("`{op}` axis {a} is out of range: the tensor has rank 0")
            } else {
                format!(
                    "`{op}` axis {a} is out of range for rank {rank} (axes are {}..={})",
                    -r,
                    r - 1
                )
            };
            self.diag.error(e.span(), msg);
            return None;
        }
        Some(if a < 0 { (a + r) as usize } else { a as usize })
    }

    /// Lowers a call of a selection op; the row's check has accepted its arguments.
    pub(super) fn selection_call(&mut self, sel: Selection, call: &Call) -> Value {
        let (name, args, span, turbofish) = (call.name, call.args, call.span, call.turbofish);
        match sel {
            Selection::Slice | Selection::StridedSlice => self.lower_tf_slice(name, args, span),
            Selection::Concat | Selection::Stack => self.lower_concat(name, args, span),
            Selection::Split => self.lower_split(args, span),
            Selection::Tile => self.lower_tile(args, span),
            Selection::Pad => self.lower_pad(args, span),
            Selection::ExpandDims | Selection::Squeeze => {
                self.lower_expand_squeeze(name, args, span)
            }
            Selection::Gather => self.lower_gather(args, span),
            Selection::OneHot => self.lower_one_hot(args, span, turbofish),
            Selection::ArgMax | Selection::ArgMin => self.lower_arg_reduce(name, args, span),
            Selection::Range => self.lower_range(args, span, turbofish),
        }
    }

    fn int_list_exact(&mut self, e: &Expr) -> Option<Vec<i64>> {
        if !matches!(e, Expr::Array(_)) {
            self.diag
                .error(e.span(), "expected a list of integer literals (`[0, 2]`)");
            return None;
        }
        self.int_list(e)
    }
}

/// The `graph()` attributes of a selection node.
pub fn attrs(op: &SelOp) -> Vec<(String, String)> {
    match op {
        SelOp::Slice { axes, .. } => {
            let parts: Vec<String> = axes
                .iter()
                .map(|a| match a {
                    SliceSpec::Index(i) => i.to_string(),
                    SliceSpec::IndexInput(k) => format!("input{k}"),
                    SliceSpec::Range { start, end, step } => {
                        let end = end.map(|e| e.to_string()).unwrap_or_default();
                        if *step == 1 {
                            format!("{start}..{end}")
                        } else {
                            format!("{start}..{end};{step}")
                        }
                    }
                    SliceSpec::Strided { begin, end, stride } => {
                        // A masked bound (i64::MIN/MAX, see `tf_dense_spec`) prints as NumPy's empty one.
                        let (masked_begin, masked_end) = if *stride > 0 {
                            (i64::MIN, i64::MAX)
                        } else {
                            (i64::MAX, i64::MIN)
                        };
                        let bound = |v: i64, masked: i64| {
                            if v == masked {
                                String::new()
                            } else {
                                v.to_string()
                            }
                        };
                        format!(
                            "{}:{}:{stride}",
                            bound(*begin, masked_begin),
                            bound(*end, masked_end)
                        )
                    }
                })
                .collect();
            vec![("axes".into(), format!("[{}]", parts.join(", ")))]
        }
        SelOp::Concat { axis, .. }
        | SelOp::Gather { axis }
        | SelOp::GatherGrad { axis }
        | SelOp::ArgReduce { axis, .. } => {
            vec![("axis".into(), axis.to_string())]
        }
        SelOp::Tile { multiples } => vec![("multiples".into(), format!("{multiples:?}"))],
        SelOp::Pad { paddings } => vec![("paddings".into(), format!("{paddings:?}"))],
        SelOp::OneHot { depth } => vec![("depth".into(), depth.to_string())],
        SelOp::Range { start, delta } => vec![
            ("start".into(), start.to_string()),
            ("delta".into(), delta.to_string()),
        ],
        SelOp::Values { values } => vec![("value".into(), values_text(values))],
        SelOp::Cumulative {
            axis,
            exclusive,
            reverse,
            ..
        } => vec![
            ("axis".into(), axis.to_string()),
            ("exclusive".into(), exclusive.to_string()),
            ("reverse".into(), reverse.to_string()),
        ],
        SelOp::TopK { k } => vec![("k".into(), k.to_string())],
        SelOp::TakeAlongLast | SelOp::ScatterAlongLast => vec![],
        SelOp::Resize { method } | SelOp::ResizeGrad { method } => {
            vec![("method".into(), method.name().into())]
        }
    }
}

/// An array constant's values for `graph()`: all of them up to [`SHOWN_VALUES`], else the
/// first ones and the count.
fn values_text(values: &[Scalar]) -> String {
    let shown: Vec<String> = values
        .iter()
        .take(SHOWN_VALUES)
        .map(|v| v.to_string())
        .collect();
    if values.len() > SHOWN_VALUES {
        format!("[{}, ...] ({} values)", shown.join(", "), values.len())
    } else {
        format!("[{}]", shown.join(", "))
    }
}

/// How many values of an array constant `graph()` lists.
const SHOWN_VALUES: usize = 16;
