//! Lowering of `constant`: a scalar literal, or nested array literals (`[[1.0, 2.0], [3.0, 4.0]]`,
//! `[0.0; 4]`) as one constant tensor of their shape, and TF's `shape` argument
//! (`constant(0.0, [16])` fills, `constant([1, 2, 3, 4], [2, 2])` reshapes), as `tf.constant`.

use super::{unwrapped, Call, Lowerer, Span};
use crate::ir::*;
use syn::Expr;

/// The most values an array constant may hold: they are emitted as literals, so a repeat
/// such as `[0.0; 1000000000]` must not make the macro build a billion tokens.
const MAX_VALUES: u64 = 1 << 16;

/// The element count of a shape whose dims are all static, else `None`.
fn static_count(shape: &[Dim]) -> Option<u64> {
    shape.iter().try_fold(1u64, |n, d| match d {
        Dim::Const(k) => n.checked_mul(*k),
        _ => None,
    })
}

impl Lowerer<'_> {
    /// `constant(v)`, `constant::<T>(v)` and `constant(v, [dims])`.
    pub(super) fn lower_constant(&mut self, call: &Call) -> NodeId {
        let (args, span) = (call.args, call.span);
        let value = match unwrapped(args[0]) {
            array @ (Expr::Array(_) | Expr::Repeat(_)) => {
                self.constant_array(array, call.dtype, span)
            }
            _ => self.constant_scalar(args[0], call.dtype, span),
        };
        match args.get(1) {
            None => value,
            Some(dims) => self.constant_with_shape(value, dims, span),
        }
    }

    /// `constant(2.0)`: the literal (or `const`) as a typed rank-0 constant.
    fn constant_scalar(&mut self, arg: &Expr, dtype: Option<DType>, span: Span) -> NodeId {
        let v = self.operand(arg);
        if self.graph.node(v).poisoned {
            return v;
        }
        if !matches!(self.graph.node(v).op, Op::Const { .. }) {
            self.diag.error(
                arg.span(),
                "`constant` takes a literal or nested array literals; a parameter is already a tensor",
            );
            return self.poisoned(span);
        }
        let v = match dtype {
            Some(dt) => self.constant_element(v, dt, arg, span),
            None => self.concrete(v),
        };
        if !self.graph.node(v).poisoned {
            self.graph.node_mut(v).span = span;
        }
        v
    }

    /// Constant `id` as `dtype`: a weak literal takes it (or is reported out of range), a
    /// typed one (`2.0f64`, `true`) must already have it.
    fn constant_element(&mut self, id: NodeId, dtype: DType, arg: &Expr, span: Span) -> NodeId {
        if let Op::Const { value, weak: true } = self.graph.node(id).op {
            let wrong_kind = match value {
                Scalar::Float(_) if !dtype.is_float() => Some("a float literal"),
                Scalar::Float(_) | Scalar::Int(_) if dtype == DType::Bool => Some("a number"),
                _ => None,
            };
            if let Some(kind) = wrong_kind {
                self.diag.error(
                    arg.span(),
                    format!("`{value}` is {kind} but the constant is {dtype}; write a literal of {dtype} or `cast` the result"),
                );
                return self.poisoned(span);
            }
            return self.resolve_weak_to(id, dtype, span);
        }
        let found = self.graph.node(id).dtype;
        if found != dtype {
            self.diag.error(
                arg.span(),
                format!("this literal is {found} but the constant is {dtype}; drop the suffix or `cast` the result"),
            );
            return self.poisoned(span);
        }
        id
    }

    /// Nested array literals as one constant tensor: its shape from the nesting (every list
    /// of one level the same length), its dtype the turbofish's, else the suffixed or bool
    /// elements' (which must agree), else f32 if any element is a float literal, else i32.
    fn constant_array(&mut self, e: &Expr, dtype: Option<DType>, span: Span) -> NodeId {
        let mut leaves = Vec::new();
        let Some(shape) = self.nested_shape(e, &mut leaves) else {
            return self.poisoned(span);
        };
        let nodes: Vec<NodeId> = leaves.iter().map(|leaf| self.operand(leaf)).collect();
        if self.is_poisoned(&nodes) {
            return self.poisoned(span);
        }
        let mut constant = true;
        for (leaf, &id) in leaves.iter().zip(&nodes) {
            if !matches!(self.graph.node(id).op, Op::Const { .. }) {
                self.diag.error(
                    leaf.span(),
                    "the elements of an array `constant` are literals or `const` items; build a tensor from tensors with `stack` or `concat`",
                );
                constant = false;
            }
        }
        if !constant {
            return self.poisoned(span);
        }
        let dt = match dtype {
            Some(dt) => dt,
            None => match self.array_dtype(&leaves, &nodes) {
                Some(dt) => dt,
                None => return self.poisoned(span),
            },
        };
        let mut values = Vec::with_capacity(nodes.len());
        for (leaf, &id) in leaves.iter().zip(&nodes) {
            let typed = self.constant_element(id, dt, leaf, span);
            match self.graph.node(typed).op {
                Op::Const { value, .. } if !self.graph.node(typed).poisoned => values.push(value),
                _ => constant = false,
            }
        }
        if !constant {
            return self.poisoned(span);
        }
        self.push(Op::Sel(SelOp::Values { values }), vec![], dt, shape, span)
    }

    /// The dtype of an array constant without a turbofish, or `None` after reporting two
    /// typed elements that disagree.
    fn array_dtype(&mut self, leaves: &[&Expr], nodes: &[NodeId]) -> Option<DType> {
        let mut typed: Option<(DType, usize)> = None;
        let mut any_float = false;
        for (i, &id) in nodes.iter().enumerate() {
            let n = self.graph.node(id);
            if let Op::Const { value, weak: true } = n.op {
                any_float |= matches!(value, Scalar::Float(_));
                continue;
            }
            match typed {
                None => typed = Some((n.dtype, i)),
                Some((first, at)) if first != n.dtype => {
                    self.diag.error(
                        leaves[i].span(),
                        format!("element {i} of this `constant` is {}, element {at} is {first}; write one dtype, or `constant::<T>` for the literals to take", n.dtype),
                    );
                    return None;
                }
                Some(_) => {}
            }
        }
        Some(match typed {
            Some((dt, _)) => dt,
            None if any_float || nodes.is_empty() => DType::F32,
            None => DType::I32,
        })
    }

    /// The shape of nested array literals, their leaves pushed in row-major order; `None`
    /// after reporting a list whose elements differ in shape.
    fn nested_shape<'e>(&mut self, e: &'e Expr, leaves: &mut Vec<&'e Expr>) -> Option<Shape> {
        match unwrapped(e) {
            Expr::Array(a) => {
                let mut inner: Option<Shape> = None;
                for el in &a.elems {
                    let s = self.nested_shape(el, leaves)?;
                    match &inner {
                        None => inner = Some(s),
                        Some(first) if *first != s => {
                            self.diag.error(
                                el.span(),
                                format!("this element has shape {} but the first one of its list has shape {}: the lists of an array `constant` nest like a tensor's rows, each of one length", shape_str(&s), shape_str(first)),
                            );
                            return None;
                        }
                        Some(_) => {}
                    }
                }
                let mut shape = vec![Dim::Const(a.elems.len() as u64)];
                shape.extend(inner.unwrap_or_default());
                Some(shape)
            }
            Expr::Repeat(r) => {
                let Some(count) = self.literal_int(&r.len).filter(|&n| n >= 0) else {
                    let msg = self.int_expected(
                        &r.len,
                        "the length of `[v; n]`",
                        "the length of `[v; n]` in a `constant` is a non-negative integer literal or `const`",
                    );
                    self.diag.error(r.len.span(), msg);
                    return None;
                };
                let start = leaves.len();
                let inner = self.nested_shape(&r.expr, leaves)?;
                let one: Vec<&'e Expr> = leaves[start..].to_vec();
                leaves.truncate(start);
                let total = (count as u64)
                    .checked_mul(one.len() as u64)
                    .and_then(|n| n.checked_add(start as u64));
                if total.is_none_or(|n| n > MAX_VALUES) {
                    self.diag.error(
                        e.span(),
                        format!("an array `constant` holds at most {MAX_VALUES} values, each emitted as a literal; use `fill` (or `constant(v, [dims])`) for one value repeated, or pass the array as a parameter"),
                    );
                    return None;
                }
                for _ in 0..count {
                    leaves.extend_from_slice(&one);
                }
                let mut shape = vec![Dim::Const(count as u64)];
                shape.extend(inner);
                Some(shape)
            }
            _ => {
                leaves.push(e);
                Some(vec![])
            }
        }
    }

    /// `constant(v, [dims])`, TF's `shape`: a scalar fills the shape (symbols allowed), an
    /// array is reshaped to it when the element counts agree.
    fn constant_with_shape(&mut self, value: NodeId, dims: &Expr, span: Span) -> NodeId {
        let Some(dims) = self.dim_list(dims, false) else {
            return self.poisoned(span);
        };
        if self.graph.node(value).poisoned {
            return value;
        }
        let shape: Shape = dims.into_iter().flatten().collect();
        let n = self.graph.node(value).clone();
        if n.shape.is_empty() {
            return self.typed(Op::Fill, vec![value], Ok((n.dtype, shape)), span);
        }
        let count = static_count(&n.shape).expect("array constants have static shapes");
        match static_count(&shape) {
            Some(want) if want == count => {
                let node = self.graph.node_mut(value);
                node.shape = shape;
                node.span = span;
                value
            }
            Some(want) => {
                self.diag.error(
                    span,
                    format!("`constant` has {count} values (shape {}) but `shape` {} holds {want}: TF's `shape` fills a scalar or reshapes an array of as many values", shape_str(&n.shape), shape_str(&shape)),
                );
                self.poisoned(span)
            }
            None => {
                self.diag.error(
                    span,
                    "the `shape` of an array `constant` is static (only a scalar fills a shape with symbols); use `reshape` on the constant",
                );
                self.poisoned(span)
            }
        }
    }
}
