//! Index-valued ops: `gather`, `one_hot`, `argmax`/`argmin` and `range`.

use crate::ir::*;
use crate::lower::weak::out_of_range;
use crate::lower::{Lowerer, Span, Value};
use std::cmp::Ordering;
use syn::Expr;

/// The length of `range(start, limit, delta)` (TF's rule), its arguments already of the
/// range's dtype: integers counted exactly (in i128, not through f64, which would round an
/// i64 beyond 2^53), floats as TF does, `ceil(|limit - start| / |delta|)`.
fn range_count(start: Scalar, limit: Scalar, delta: Scalar) -> Result<u64, String> {
    // `delta`'s sign and how `start` compares with `limit` tell an empty range from one that
    // runs the wrong way.
    let direction = |delta_sign: Ordering, start_to_limit: Option<Ordering>| {
        if delta_sign == Ordering::Equal {
            Err("`range` delta must not be 0".to_string())
        } else if start_to_limit == Some(delta_sign) {
            Err(format!("`range({start}, {limit}, {delta})`: TF needs start <= limit when delta > 0 and start >= limit when delta < 0"))
        } else {
            Ok(())
        }
    };
    match (start, limit, delta) {
        (Scalar::Int(s), Scalar::Int(l), Scalar::Int(d)) => {
            direction(d.cmp(&0), Some(s.cmp(&l)))?;
            let (s, l, d) = (i128::from(s), i128::from(l), i128::from(d));
            Ok((((l - s).abs() + d.abs() - 1) / d.abs()) as u64)
        }
        _ => {
            let (s, l, d) = (start.as_f64(), limit.as_f64(), delta.as_f64());
            if !(s.is_finite() && l.is_finite() && d.is_finite()) {
                return Err(format!("`range({start}, {limit}, {delta})`: a float range needs finite arguments (its length would not be)"));
            }
            direction(
                d.partial_cmp(&0.0).unwrap_or(Ordering::Equal),
                s.partial_cmp(&l),
            )?;
            Ok(((l - s) / d).abs().ceil() as u64)
        }
    }
}

impl Lowerer<'_> {
    pub(super) fn lower_gather(&mut self, args: &[&Expr], span: Span) -> Value {
        let (x, xn) = self.sel_operand(args[0]);
        let (ind, indn) = self.sel_operand(args[1]);
        let axis = match args.get(2) {
            Some(a) => self.sel_axis("gather", a, xn.shape.len()),
            None if xn.shape.is_empty() => {
                self.diag.error(
                    args[0].span(),
                    "`gather` needs a tensor of rank 1 or more; found a scalar",
                );
                None
            }
            None => Some(0),
        };
        let Some(axis) = axis else {
            return Value::Tensor(self.poisoned(span));
        };
        if xn.poisoned || indn.poisoned {
            return Value::Tensor(self.poisoned(span));
        }
        if !indn.dtype.is_int() {
            let msg = format!(
                "`gather` indices must be i32 or i64; found {}",
                type_str(indn.dtype, &indn.shape)
            );
            return self.sel_error(args[1].span(), msg, span);
        }
        let mut shape = xn.shape[..axis].to_vec();
        shape.extend(indn.shape.iter().cloned());
        shape.extend(xn.shape[axis + 1..].iter().cloned());
        let op = SelOp::Gather { axis };
        Value::Tensor(self.sel_node(op, vec![x, ind], xn.dtype, shape, span))
    }

    pub(super) fn lower_one_hot(
        &mut self,
        args: &[&Expr],
        span: Span,
        turbofish: Option<&(String, Span)>,
    ) -> Value {
        let (ind, indn) = self.sel_operand(args[0]);
        let depth = match self.literal_int(args[1]) {
            Some(d) if d >= 0 => d as u64,
            _ => {
                return self.sel_error(
                    args[1].span(),
                    "`one_hot` depth must be a non-negative integer literal or `const`",
                    span,
                )
            }
        };
        let dt = match turbofish {
            None => None,
            Some((t, ts)) => match DType::from_name(t) {
                Some(d) => Some(d),
                None => {
                    let msg = format!("unknown dtype `{t}`: one of f32, f64, i32, i64, bool");
                    return self.sel_error(*ts, msg, span);
                }
            },
        };
        let (on, off) = if args.len() == 4 {
            let (a, b) = (self.operand(args[2]), self.operand(args[3]));
            let (a, b) = self.coerce(a, b, span);
            match dt {
                Some(dt) => (
                    self.resolve_weak_to(a, dt, span),
                    self.resolve_weak_to(b, dt, span),
                ),
                None => (self.concrete(a), self.concrete(b)),
            }
        } else {
            let dt = dt.unwrap_or(DType::F32);
            let mut c = |v: i64| {
                self.push(
                    Op::Const {
                        value: Scalar::Int(v).convert(dt),
                        weak: false,
                    },
                    vec![],
                    dt,
                    vec![],
                    span,
                )
            };
            (c(1), c(0))
        };
        let (onn, offn) = (self.graph.node(on).clone(), self.graph.node(off).clone());
        if indn.poisoned || onn.poisoned || offn.poisoned {
            return Value::Tensor(self.poisoned(span));
        }
        if !indn.dtype.is_int() {
            let msg = format!(
                "`one_hot` indices must be i32 or i64; found {}",
                type_str(indn.dtype, &indn.shape)
            );
            return self.sel_error(args[0].span(), msg, span);
        }
        if !onn.shape.is_empty() || !offn.shape.is_empty() || onn.dtype != offn.dtype {
            let msg = format!(
                "`one_hot` on and off values must be scalars of one dtype; found {} and {}",
                type_str(onn.dtype, &onn.shape),
                type_str(offn.dtype, &offn.shape)
            );
            return self.sel_error(args[2].span(), msg, span);
        }
        let mut shape = indn.shape.clone();
        shape.push(Dim::Const(depth));
        let op = SelOp::OneHot { depth };
        Value::Tensor(self.sel_node(op, vec![ind, on, off], onn.dtype, shape, span))
    }

    pub(super) fn lower_arg_reduce(&mut self, name: &str, args: &[&Expr], span: Span) -> Value {
        let (x, xn) = self.sel_operand(args[0]);
        let rank = xn.shape.len();
        let axis = match args.get(1) {
            Some(a) => self.sel_axis(name, a, rank),
            None if rank == 0 => {
                let msg = format!("`{name}` needs a tensor of rank 1 or more; found a scalar");
                self.diag.error(args[0].span(), msg);
                None
            }
            None => Some(0),
        };
        let Some(axis) = axis else {
            return Value::Tensor(self.poisoned(span));
        };
        if xn.poisoned {
            return Value::Tensor(self.poisoned(span));
        }
        let ty = type_str(xn.dtype, &xn.shape);
        if xn.dtype == DType::Bool {
            let msg = format!("`{name}` needs a number tensor; found {ty}");
            return self.sel_error(args[0].span(), msg, span);
        }
        let mut shape = xn.shape.clone();
        shape.remove(axis);
        let out_empty = shape.contains(&Dim::Const(0));
        if xn.shape[axis] == Dim::Const(0) && !out_empty {
            let msg = format!("`{name}` over the empty axis {axis} of {ty} has no answer");
            return self.sel_error(args.get(1).map_or(span, |a| a.span()), msg, span);
        }
        let op = SelOp::ArgReduce {
            axis,
            min: name == "argmin",
        };
        Value::Tensor(self.sel_node(op, vec![x], DType::I64, shape, span))
    }

    /// A `range` argument: an integer or float literal (or `const`), or a symbol for `n`.
    fn range_arg(&mut self, e: &Expr) -> Option<Result<Scalar, String>> {
        if let Expr::Path(p) = e {
            if let Some(id) = p.path.get_ident() {
                let s = id.to_string();
                if self.symbols.contains(&s) {
                    return Some(Err(s));
                }
            }
        }
        let id = self.operand(e);
        match self.graph.node(id).op {
            Op::Const { value, .. } if !matches!(value, Scalar::Bool(_)) => Some(Ok(value)),
            _ => {
                self.diag.error(e.span(), "a `range` argument must be a number literal, a `const` or a `for` variable (or, for `n`, a symbolic dim of the signature)");
                None
            }
        }
    }

    pub(super) fn lower_range(
        &mut self,
        args: &[&Expr],
        span: Span,
        turbofish: Option<&(String, Span)>,
    ) -> Value {
        let vals: Option<Vec<Result<Scalar, String>>> =
            args.iter().map(|a| self.range_arg(a)).collect();
        let Some(vals) = vals else {
            return Value::Tensor(self.poisoned(span));
        };
        let (start, limit, delta) = match vals.as_slice() {
            [n] => (Ok(Scalar::Int(0)), n.clone(), Ok(Scalar::Int(1))),
            [s, l] => (s.clone(), l.clone(), Ok(Scalar::Int(1))),
            [s, l, d] => (s.clone(), l.clone(), d.clone()),
            _ => unreachable!("arity checked"),
        };
        let any_float = [&start, &limit, &delta]
            .iter()
            .any(|v| matches!(v, Ok(Scalar::Float(_))));
        let dt = match turbofish {
            Some((t, ts)) => match DType::from_name(t) {
                Some(DType::Bool) | None => {
                    let msg =
                        format!("`range` dtype must be one of i32, i64, f32, f64; found `{t}`");
                    return self.sel_error(*ts, msg, span);
                }
                Some(d) => d,
            },
            None if any_float => DType::F32,
            None => DType::I32,
        };
        if any_float && !dt.is_float() {
            return self.sel_error(
                span,
                format!("`range::<{dt}>` takes integer arguments"),
                span,
            );
        }
        // Every literal argument must fit the range's dtype, as any literal must: `as`
        // would wrap `5000000000` to 705032704 in i32, silently.
        let mut fits = true;
        for (arg, val) in args.iter().zip(&vals) {
            let Ok(value) = val else { continue };
            if let Some(range) = out_of_range(*value, dt) {
                let hint = if turbofish.is_none() && dt == DType::I32 {
                    "; `range::<i64>(..)` makes an i64 range"
                } else {
                    ""
                };
                self.diag.error(
                    arg.span(),
                    format!("the constant `{value}` is out of range for {dt}, the dtype it takes here ({range}){hint}"),
                );
                fits = false;
            }
        }
        if !fits {
            return Value::Tensor(self.poisoned(span));
        }
        let (Ok(start), Ok(delta)) = (start, delta) else {
            return self.sel_error(
                span,
                "only `n` (or `limit` with start 0 and delta 1) may be a symbolic dim in `range`",
                span,
            );
        };
        let (start, delta) = (start.convert(dt), delta.convert(dt));
        let n = match limit {
            Err(sym) => {
                if start.as_f64() != 0.0 || delta.as_f64() != 1.0 {
                    let msg = format!("`range` up to the symbolic dim `{sym}` needs start 0 and delta 1 (its length would not be a dim grafo can name)");
                    return self.sel_error(span, msg, span);
                }
                self.subst_dim(&Dim::Sym(sym))
            }
            Ok(limit) => match range_count(start, limit.convert(dt), delta) {
                Ok(count) => Dim::Const(count),
                Err(msg) => return self.sel_error(span, msg, span),
            },
        };
        let op = SelOp::Range { start, delta };
        Value::Tensor(self.sel_node(op, vec![], dt, vec![n], span))
    }
}
