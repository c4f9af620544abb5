//! Assembly ops: `concat`, `stack`, `split`, `tile`, `pad`, `expand_dims` and `squeeze`.

use crate::ir::*;
use crate::lower::{Lowerer, Span, Value};
use syn::Expr;

impl Lowerer<'_> {
    pub(super) fn lower_concat(&mut self, name: &str, args: &[&Expr], span: Span) -> Value {
        let Expr::Array(list) = args[0] else {
            let msg = format!("`{name}` takes a list of tensors `[a, b, ...]` first");
            return self.sel_error(args[0].span(), msg, span);
        };
        if list.elems.is_empty() {
            let msg = format!("`{name}` needs at least one tensor");
            return self.sel_error(args[0].span(), msg, span);
        }
        let parts: Vec<(NodeId, Node, Span)> = list
            .elems
            .iter()
            .map(|e| {
                let (id, n) = self.sel_operand(e);
                (id, n, e.span())
            })
            .collect();
        if parts.iter().any(|p| p.1.poisoned) {
            return Value::Tensor(self.poisoned(span));
        }
        let first = parts[0].1.clone();
        let ty0 = type_str(first.dtype, &first.shape);
        let stack = name == "stack";
        let rank = first.shape.len() + usize::from(stack);
        if !stack && rank == 0 {
            let msg =
                format!("`concat` joins tensors along an axis; the first is a scalar ({ty0})");
            return self.sel_error(parts[0].2, msg, span);
        }
        let axis = match args.get(1) {
            Some(a) => match self.sel_axis(name, a, rank) {
                Some(a) => a,
                None => return Value::Tensor(self.poisoned(span)),
            },
            None => 0,
        };
        for (k, (_, n, at)) in parts.iter().enumerate().skip(1) {
            let ty = type_str(n.dtype, &n.shape);
            if n.dtype != first.dtype {
                let msg = format!("`{name}` operands must have one dtype: operand 0 is {ty0}, operand {k} is {ty}");
                return self.sel_error(*at, msg, span);
            }
            let agree = if stack {
                n.shape == first.shape
            } else {
                n.shape.len() == first.shape.len()
                    && n.shape
                        .iter()
                        .zip(&first.shape)
                        .enumerate()
                        .all(|(a, (x, y))| a == axis || x == y)
            };
            if !agree {
                let msg = if stack {
                    format!("`stack` operands must have one shape: operand 0 is {ty0}, operand {k} is {ty}")
                } else {
                    format!("`concat` operands must agree on every axis but {axis}: operand 0 is {ty0}, operand {k} is {ty}")
                };
                return self.sel_error(*at, msg, span);
            }
        }
        let mut inputs = Vec::new();
        if stack {
            let mut shape = first.shape.clone();
            shape.insert(axis, Dim::Const(1));
            for (id, _, at) in &parts {
                inputs.push(self.view_as(*id, shape.clone(), *at));
            }
        } else {
            inputs = parts.iter().map(|p| p.0).collect();
        }
        let mut shape = if stack {
            let mut s = first.shape.clone();
            s.insert(axis, Dim::Const(0));
            s
        } else {
            first.shape.clone()
        };
        // The joined axis: a constant, or terms over one product of symbols whose
        // coefficients add up (`B` and `B` give `B*2`; `B*4` and `B*4`, `B*8`).
        let mut total = 0u64;
        let mut sym: Option<Monomial> = None;
        let overflow = || format!("`{name}` along axis {axis}: the joined size overflows");
        for (_, n, _) in &parts {
            let d = if stack {
                Dim::Const(1)
            } else {
                n.shape[axis].clone()
            };
            match d {
                Dim::Const(c) => match total.checked_add(c) {
                    Some(t) => total = t,
                    None => return self.sel_error(span, overflow(), span),
                },
                other => {
                    let m = other.monomial();
                    match &mut sym {
                        None => sym = Some(m),
                        Some(s) if s.syms == m.syms => match s.coef.checked_add(m.coef) {
                            Some(c) => s.coef = c,
                            None => return self.sel_error(span, overflow(), span),
                        },
                        Some(s) => {
                            let msg = format!("`concat` along axis {axis} would add `{s}` and `{m}`, a size that is not a dim grafo can name (a dim is a constant times a product of symbols: `B`, `B*2`, `B*H*4`)");
                            return self.sel_error(span, msg, span);
                        }
                    }
                }
            }
        }
        shape[axis] = match sym {
            None => Dim::Const(total),
            Some(s) if total == 0 => Dim::from_monomial(s),
            Some(s) => {
                let msg = format!("`concat` along axis {axis} would give `{s} + {total}`, a size that is not a dim grafo can name (a dim is a constant times a product of symbols: `B`, `B*2`, `B*H*4`; sums of a symbol and a constant are not dims)");
                return self.sel_error(span, msg, span);
            }
        };
        let op_name: &'static str = if stack { "stack" } else { "concat" };
        let op = SelOp::Concat {
            name: op_name,
            axis,
        };
        Value::Tensor(self.sel_node(op, inputs, first.dtype, shape, span))
    }

    pub(super) fn lower_split(&mut self, args: &[&Expr], span: Span) -> Value {
        let (x, xn) = self.sel_operand(args[0]);
        let rank = xn.shape.len();
        let axis = match args.get(2) {
            Some(a) => match self.sel_axis("split", a, rank) {
                Some(a) => a,
                None => return Value::Tensor(self.poisoned(span)),
            },
            None if rank == 0 => {
                return self.sel_error(
                    args[0].span(),
                    "`split` of a scalar: there is no axis to split",
                    span,
                )
            }
            None => 0,
        };
        let sizes_given = matches!(args[1], Expr::Array(_));
        let Some(list) = self.int_list(args[1]) else {
            return Value::Tensor(self.poisoned(span));
        };
        if xn.poisoned {
            return Value::Tensor(self.poisoned(span));
        }
        let ty = type_str(xn.dtype, &xn.shape);
        let Dim::Const(d) = xn.shape[axis] else {
            return self.split_symbolic(x, &xn, axis, &list, sizes_given, args, span);
        };
        let sizes: Vec<u64> = if sizes_given {
            // TF's `size_splits`: non-negative sizes, at most one -1 for the rest of the axis.
            let rest = list.iter().filter(|&&s| s == -1).count();
            let known: i128 = list.iter().filter(|&&s| s != -1).map(|&s| s as i128).sum();
            let fill = d as i128 - known;
            if list.iter().any(|&s| s < -1) || rest > 1 || (rest == 0 && fill != 0) || fill < 0 {
                let msg = format!("`split` sizes {list:?} must be non-negative (one may be -1, the rest of the axis) and add up to {d}, the size of axis {axis} of {ty}");
                return self.sel_error(args[1].span(), msg, span);
            }
            list.iter()
                .map(|&s| if s == -1 { fill as u64 } else { s as u64 })
                .collect()
        } else {
            let n = list[0];
            if n < 1 || d % n as u64 != 0 {
                let msg = format!("`split` into {n} equal pieces needs a positive count that divides {d}, the size of axis {axis} of {ty}");
                return self.sel_error(args[1].span(), msg, span);
            }
            vec![d / n as u64; n as usize]
        };
        let mut pieces = Vec::new();
        let mut at = 0u64;
        for s in sizes {
            let mut axes = vec![
                SliceSpec::Range {
                    start: 0,
                    end: None,
                    step: 1
                };
                axis + 1
            ];
            axes[axis] = SliceSpec::Range {
                start: at as i64,
                end: Some((at + s) as i64),
                step: 1,
            };
            let mut shape = xn.shape.clone();
            shape[axis] = Dim::Const(s);
            at += s;
            let op = SelOp::Slice {
                name: "split",
                axes,
            };
            pieces.push(Value::Tensor(self.sel_node(
                op,
                vec![x],
                xn.dtype,
                shape,
                span,
            )));
        }
        Value::Tuple(pieces)
    }

    /// `split(x, n, axis)` along a symbolic axis: a dim `c*S` (a constant `c` times a product
    /// of symbols) with `n` dividing `c` splits into `n` pieces of `S*(c/n)`, each an index of
    /// the `reshape` view `[.., n, S*(c/n), ..]` (so `B*2` gives two `B`s, `B*4` four `B`s);
    /// any other count would give a size that is not a dim, a compile error.
    #[allow(clippy::too_many_arguments)]
    fn split_symbolic(
        &mut self,
        x: NodeId,
        xn: &Node,
        axis: usize,
        list: &[i64],
        sizes_given: bool,
        args: &[&Expr],
        span: Span,
    ) -> Value {
        let ty = type_str(xn.dtype, &xn.shape);
        let dim = &xn.shape[axis];
        if sizes_given {
            let msg = format!("`split` into listed sizes needs a static axis; axis {axis} of {ty} is `{dim}` (split into a number of equal pieces instead)");
            return self.sel_error(args[1].span(), msg, span);
        }
        let m = dim.monomial();
        let n = list[0];
        if n < 1 || !m.coef.is_multiple_of(n as u64) {
            let msg = format!("`split` of axis {axis} (`{dim}`) into {n} equal pieces: the piece size `{dim}/{n}` is not a dim grafo can name; a symbolic axis splits by a factor of its constant (`B*2` into 2 pieces of `B`; axes from `concat`, `tile` or `reshape` have such sizes)");
            return self.sel_error(args[1].span(), msg, span);
        }
        let piece = Dim::from_monomial(Monomial {
            coef: m.coef / n as u64,
            syms: m.syms,
        });
        let mut viewed = xn.shape.clone();
        viewed[axis] = piece.clone();
        viewed.insert(axis, Dim::Const(n as u64));
        let view = self.view_as(x, viewed, span);
        let mut shape = xn.shape.clone();
        shape[axis] = piece;
        let whole = SliceSpec::Range {
            start: 0,
            end: None,
            step: 1,
        };
        let pieces = (0..n)
            .map(|i| {
                let mut axes = vec![whole; axis];
                axes.push(SliceSpec::Index(i));
                let op = SelOp::Slice {
                    name: "split",
                    axes,
                };
                Value::Tensor(self.sel_node(op, vec![view], xn.dtype, shape.clone(), span))
            })
            .collect();
        Value::Tuple(pieces)
    }

    pub(super) fn lower_tile(&mut self, args: &[&Expr], span: Span) -> Value {
        let (x, xn) = self.sel_operand(args[0]);
        let Some(m) = self.int_list_exact(args[1]) else {
            return Value::Tensor(self.poisoned(span));
        };
        if xn.poisoned {
            return Value::Tensor(self.poisoned(span));
        }
        let ty = type_str(xn.dtype, &xn.shape);
        if m.len() != xn.shape.len() || m.iter().any(|&k| k < 0) {
            let msg =
                format!("`tile` needs one non-negative multiple per axis of {ty}; found {m:?}");
            return self.sel_error(args[1].span(), msg, span);
        }
        let mut shape = Vec::new();
        for (a, (d, &k)) in xn.shape.iter().zip(&m).enumerate() {
            shape.push(match d {
                Dim::Const(c) => match c.checked_mul(k as u64) {
                    Some(t) => Dim::Const(t),
                    None => {
                        let msg = format!("`tile` of axis {a} ({c}) by {k} overflows");
                        return self.sel_error(args[1].span(), msg, span);
                    }
                },
                symbolic => match symbolic.times(&Dim::Const(k as u64)) {
                    Some(d) => d,
                    None => {
                        let msg = format!("`tile` of axis {a} (`{symbolic}`) by {k} overflows");
                        return self.sel_error(args[1].span(), msg, span);
                    }
                },
            });
        }
        let op = SelOp::Tile {
            multiples: m.iter().map(|&k| k as u64).collect(),
        };
        Value::Tensor(self.sel_node(op, vec![x], xn.dtype, shape, span))
    }

    pub(super) fn lower_pad(&mut self, args: &[&Expr], span: Span) -> Value {
        let (x, xn) = self.sel_operand(args[0]);
        let pairs_expr = args[1];
        let bad = |lw: &mut Self| {
            lw.sel_error(
                pairs_expr.span(),
                "`pad` paddings are a list of `[before, after]` pairs of non-negative integer literals, one per axis",
                span,
            )
        };
        let Expr::Array(rows) = pairs_expr else {
            return bad(self);
        };
        let mut paddings = Vec::new();
        for row in &rows.elems {
            let Expr::Array(pair) = row else {
                return bad(self);
            };
            if let Some((e, msg)) = pair
                .elems
                .iter()
                .find_map(|e| Some((e, self.int_out_of_range(e, "this padding")?)))
            {
                return self.sel_error(e.span(), msg, span);
            }
            let v: Option<Vec<i64>> = pair.elems.iter().map(|e| self.literal_int(e)).collect();
            match v.as_deref() {
                Some(&[b, a]) if b >= 0 && a >= 0 => paddings.push((b as u64, a as u64)),
                _ => return bad(self),
            }
        }
        let value = match args.get(2) {
            Some(v) => {
                let id = self.operand(v);
                self.resolve_weak_to(id, xn.dtype, v.span())
            }
            None => {
                let zero = Scalar::Int(0).convert(xn.dtype);
                self.push(
                    Op::Const {
                        value: zero,
                        weak: false,
                    },
                    vec![],
                    xn.dtype,
                    vec![],
                    span,
                )
            }
        };
        let vn = self.graph.node(value).clone();
        if xn.poisoned || vn.poisoned {
            return Value::Tensor(self.poisoned(span));
        }
        let ty = type_str(xn.dtype, &xn.shape);
        if paddings.len() != xn.shape.len() {
            let msg = format!(
                "`pad` needs one `[before, after]` pair per axis of {ty}; found {}",
                paddings.len()
            );
            return self.sel_error(pairs_expr.span(), msg, span);
        }
        if vn.dtype != xn.dtype || !vn.shape.is_empty() {
            let msg = format!(
                "the `pad` value must be a scalar of the tensor's dtype {}; found {}",
                xn.dtype,
                type_str(vn.dtype, &vn.shape)
            );
            return self.sel_error(args[2].span(), msg, span);
        }
        let mut shape = Vec::new();
        for (a, (d, (b, e))) in xn.shape.iter().zip(&paddings).enumerate() {
            shape.push(match d {
                Dim::Const(c) => match c.checked_add(*b).and_then(|t| t.checked_add(*e)) {
                    Some(t) => Dim::Const(t),
                    None => {
                        let msg = format!("padding axis {a} ({c}) by {b} and {e} overflows");
                        return self.sel_error(pairs_expr.span(), msg, span);
                    }
                },
                _ if b + e == 0 => d.clone(),
                s => {
                    let msg = format!("padding the symbolic axis {a} (`{s}`) gives a size that is not a dim grafo can name; pad only static axes");
                    return self.sel_error(pairs_expr.span(), msg, span);
                }
            });
        }
        let op = SelOp::Pad { paddings };
        Value::Tensor(self.sel_node(op, vec![x, value], xn.dtype, shape, span))
    }

    pub(super) fn lower_expand_squeeze(&mut self, name: &str, args: &[&Expr], span: Span) -> Value {
        let (x, xn) = self.sel_operand(args[0]);
        let rank = xn.shape.len();
        let ty = type_str(xn.dtype, &xn.shape);
        if name == "expand_dims" {
            let Some(axis) = self.sel_axis(name, args[1], rank + 1) else {
                return Value::Tensor(self.poisoned(span));
            };
            let mut shape = xn.shape.clone();
            shape.insert(axis, Dim::Const(1));
            return Value::Tensor(self.view_as(x, shape, span));
        }
        let drop: Vec<usize> = match args.get(1) {
            None => (0..rank)
                .filter(|&a| xn.shape[a] == Dim::Const(1))
                .collect(),
            Some(a) => {
                let Some(list) = self.int_list(a) else {
                    return Value::Tensor(self.poisoned(span));
                };
                let mut v = Vec::new();
                for k in list {
                    let r = rank as i64;
                    if k < -r || k >= r {
                        let msg = format!("`squeeze` axis {k} is out of range for {ty}");
                        return self.sel_error(a.span(), msg, span);
                    }
                    let k = if k < 0 { (k + r) as usize } else { k as usize };
                    if xn.shape[k] != Dim::Const(1) {
                        let msg = format!(
                            "`squeeze` axis {k} has size {}, not 1 (the tensor is {ty})",
                            xn.shape[k]
                        );
                        return self.sel_error(a.span(), msg, span);
                    }
                    v.push(k);
                }
                v
            }
        };
        let shape: Shape = (0..rank)
            .filter(|a| !drop.contains(a))
            .map(|a| xn.shape[a].clone())
            .collect();
        Value::Tensor(self.view_as(x, shape, span))
    }
}
