//! Weak literals: a literal typed by its partner, retyped or made concrete when its dtype is known, and checked against that dtype's range.

use super::{Lowerer, Span};
use crate::ir::*;

/// The values of a dtype, for messages.
pub(super) fn range_text(dtype: DType) -> String {
    match dtype {
        DType::I32 => format!("{} holds {}..={}", dtype, i32::MIN, i32::MAX),
        DType::I64 => format!("{} holds {}..={}", dtype, i64::MIN, i64::MAX),
        DType::F32 => format!("the largest finite {dtype} is {:e}", f32::MAX),
        DType::F64 => format!("the largest finite {dtype} is {:e}", f64::MAX),
        DType::Bool => "bool holds `true` and `false`".into(),
    }
}

/// `Some(range)` when constant `value` does not fit `dtype`: an integer outside its range,
/// or a finite float that would round to infinity (as rustc's `overflowing_literals`).
pub(super) fn out_of_range(value: Scalar, dtype: DType) -> Option<String> {
    let fits = match (value, dtype) {
        (Scalar::Int(v), DType::I32) => i32::try_from(v).is_ok(),
        (Scalar::Float(v), DType::F32) => !v.is_finite() || (v as f32).is_finite(),
        _ => true,
    };
    (!fits).then(|| range_text(dtype))
}

impl Lowerer<'_> {
    /// Any weak constant still out of its dtype's range where an op reads it (the paths
    /// that retype weak operands check it there; this catches the others).
    pub(super) fn check_weak_ranges(&mut self) {
        let mut reported = Vec::new();
        for n in &self.graph.nodes {
            if n.poisoned {
                continue;
            }
            for &i in &n.inputs {
                let input = self.graph.node(i);
                if let Op::Const { value, weak: true } = input.op {
                    if let Some(range) = out_of_range(value, input.dtype) {
                        if !reported.contains(&i) {
                            reported.push(i);
                            self.diag.error(input.span, format!("the constant `{value}` is out of range for {}, the dtype it takes here ({range})", input.dtype));
                        }
                    }
                }
            }
        }
    }

    pub(super) fn is_weak(&self, id: NodeId) -> bool {
        matches!(
            self.graph.node(id).op,
            Op::Const { weak: true, .. } | Op::Host { .. }
        )
    }

    /// A copy of weak node `id` typed as `dtype`; a float literal cannot become an integer.
    fn retype(&mut self, id: NodeId, dtype: DType, span: Span) -> NodeId {
        let n = self.graph.node(id).clone();
        match n.op {
            Op::Const { value, weak: true } => {
                if matches!(value, Scalar::Float(_)) && !dtype.is_float() {
                    self.diag.error(
                        n.span,
                        format!("the float literal `{value}` cannot take the dtype {dtype} of the other operand; write an integer or `cast` the tensor"),
                    );
                    return self.poisoned(span);
                }
                if dtype == DType::Bool {
                    self.diag.error(
                        n.span,
                        format!("the literal `{value}` is a number but the other operand is bool"),
                    );
                    return self.poisoned(span);
                }
                if let Some(range) = out_of_range(value, dtype) {
                    self.diag.error(
                        n.span,
                        format!("the constant `{value}` is out of range for {dtype}, the dtype it takes here ({range})"),
                    );
                    return self.poisoned(span);
                }
                self.push(
                    Op::Const {
                        value: value.convert(dtype),
                        weak: false,
                    },
                    vec![],
                    dtype,
                    vec![],
                    n.span,
                )
            }
            Op::Host { ref expr } => {
                if n.dtype == DType::Bool && dtype != DType::Bool
                    || n.dtype != DType::Bool && dtype == DType::Bool
                {
                    self.diag.error(
                        n.span,
                        format!(
                            "the host value is {} but the other operand is {dtype}",
                            n.dtype
                        ),
                    );
                    return self.poisoned(span);
                }
                if n.dtype.is_float() && !dtype.is_float() {
                    self.diag.error(n.span, format!("the host value is a float ({}) but the other operand is {dtype}; use an integer host value", n.dtype));
                    return self.poisoned(span);
                }
                let id = self.push(
                    Op::Host { expr: expr.clone() },
                    vec![],
                    dtype,
                    vec![],
                    n.span,
                );
                self.graph.node_mut(id).name = n.name.clone();
                id
            }
            _ => id,
        }
    }

    /// Whether weak constant `id` does not fit `dtype`.
    fn weak_out_of_range(&self, id: NodeId, dtype: DType) -> bool {
        match self.graph.node(id).op {
            Op::Const { value, weak: true } => out_of_range(value, dtype).is_some(),
            _ => false,
        }
    }

    /// A weak node with its default dtype (i32 / f32), other nodes unchanged.
    pub(super) fn concrete(&mut self, id: NodeId) -> NodeId {
        match self.graph.node(id).op {
            Op::Const { value, weak: true } => {
                let dt = match value {
                    Scalar::Float(_) => DType::F32,
                    Scalar::Int(_) => DType::I32,
                    Scalar::Bool(_) => DType::Bool,
                };
                let span = self.graph.node(id).span;
                self.retype(id, dt, span)
            }
            _ => id,
        }
    }

    pub(super) fn resolve_weak_to(&mut self, id: NodeId, dtype: DType, span: Span) -> NodeId {
        if self.is_weak(id) && !matches!(self.graph.node(id).op, Op::Host { .. }) {
            self.retype(id, dtype, span)
        } else {
            id
        }
    }

    /// Gives two operands one dtype where one of them is weak.
    pub(super) fn coerce(&mut self, a: NodeId, b: NodeId, span: Span) -> (NodeId, NodeId) {
        let (wa, wb) = (self.is_weak(a), self.is_weak(b));
        let (da, db) = (self.graph.node(a).dtype, self.graph.node(b).dtype);
        // A weak operand out of range is retyped even to its own default dtype: `retype` is
        // where the range is reported (`x + 3000000000` with `x: i32`).
        match (wa, wb) {
            (true, false) if da != db || self.weak_out_of_range(a, db) => {
                (self.retype(a, db, span), b)
            }
            (false, true) if da != db || self.weak_out_of_range(b, da) => {
                (a, self.retype(b, da, span))
            }
            (true, true) if da != db => {
                let dt = if da.is_float() { da } else { db };
                (self.retype(a, dt, span), self.retype(b, dt, span))
            }
            _ => (a, b),
        }
    }

    // ----- statements and blocks -----------------------------------------------------------
}
