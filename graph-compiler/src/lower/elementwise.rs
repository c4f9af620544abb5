//! Lowering of the elementwise family: literals, the unary and binary operators (`-x`, `a + b`, comparisons), and the creation and elementwise calls of the op table (`constant`, `zeros`, `exp`, `select`, `cast`, ...).

use super::{out_of_range, range_text, unwrapped, Call, Lowerer, Span, Value};
use crate::infer;
use crate::ir::*;
use crate::ops::Lowering;
use quote::ToTokens;
use syn::{BinOp, Expr, Lit, UnOp};

impl Lowerer<'_> {
    pub(super) fn lower_lit(&mut self, lit: &Lit) -> Value {
        self.lower_signed_lit(lit, false, lit.span().into())
    }

    /// A literal, negated first when `negative` (`-2147483648i32` is in range, as in Rust);
    /// a suffixed literal out of its dtype's range is an error here, an unsuffixed one when
    /// it meets its dtype.
    pub(super) fn lower_signed_lit(&mut self, lit: &Lit, negative: bool, span: Span) -> Value {
        let sign = if negative { "-" } else { "" };
        let (value, dtype, weak) = match lit {
            Lit::Int(i) => {
                let magnitude = i.base10_parse::<u64>().ok().map(i128::from);
                let signed = magnitude.map(|m| if negative { -m } else { m });
                let v = match signed.and_then(|v| i64::try_from(v).ok()) {
                    Some(v) => v,
                    None => {
                        self.diag.error(
                            span,
                            format!("the integer literal `{sign}{}` is out of range for i64, the widest integer dtype ({})", i.base10_digits(), range_text(DType::I64)),
                        );
                        return Value::Tensor(self.poisoned(span));
                    }
                };
                let suffixed = |dtype: DType| match out_of_range(Scalar::Int(v), dtype) {
                    Some(range) => Err(format!(
                        "the literal `{sign}{}` is out of range for {dtype} ({range})",
                        i.token()
                    )),
                    None => Ok(dtype),
                };
                let checked = match i.suffix() {
                    "i32" => suffixed(DType::I32),
                    _ => Ok(DType::I32),
                };
                if let Err(msg) = checked {
                    self.diag.error(span, msg);
                    return Value::Tensor(self.poisoned(span));
                }
                match i.suffix() {
                    "" => (Scalar::Int(v), DType::I32, true),
                    "i32" => (Scalar::Int(v), DType::I32, false),
                    "i64" => (Scalar::Int(v), DType::I64, false),
                    "f32" => (Scalar::Int(v).convert(DType::F32), DType::F32, false),
                    "f64" => (Scalar::Float(v as f64), DType::F64, false),
                    s => {
                        self.diag.error(
                            span,
                            format!(
                                "literal suffix `{s}` is not a tensor dtype (f32, f64, i32, i64)"
                            ),
                        );
                        (Scalar::Int(v), DType::I32, true)
                    }
                }
            }
            Lit::Float(f) => {
                let Ok(v) = f.base10_parse::<f64>() else {
                    self.diag.error(span, "this float literal cannot be read");
                    return Value::Tensor(self.poisoned(span));
                };
                let v = if negative { -v } else { v };
                if v.is_infinite() {
                    self.diag.error(
                        span,
                        format!(
                            "the literal `{sign}{}` is out of range for f64 ({})",
                            f.token(),
                            range_text(DType::F64)
                        ),
                    );
                    return Value::Tensor(self.poisoned(span));
                }
                if f.suffix() == "f32" && out_of_range(Scalar::Float(v), DType::F32).is_some() {
                    self.diag.error(
                        span,
                        format!(
                            "the literal `{sign}{}` is out of range for f32 ({})",
                            f.token(),
                            range_text(DType::F32)
                        ),
                    );
                    return Value::Tensor(self.poisoned(span));
                }
                match f.suffix() {
                    "" => (Scalar::Float(v), DType::F32, true),
                    "f32" => (Scalar::Float(v as f32 as f64), DType::F32, false),
                    "f64" => (Scalar::Float(v), DType::F64, false),
                    s => {
                        self.diag
                            .error(span, format!("literal suffix `{s}` is not a float dtype"));
                        (Scalar::Float(v), DType::F32, true)
                    }
                }
            }
            Lit::Bool(b) => (Scalar::Bool(b.value), DType::Bool, false),
            other => {
                self.diag.error(
                    other.span(),
                    "only number and bool literals are values in a `#[graph]` body",
                );
                return Value::Tensor(self.poisoned(span));
            }
        };
        Value::Tensor(self.push(Op::Const { value, weak }, vec![], dtype, vec![], span))
    }

    pub(super) fn lower_unary(&mut self, u: &syn::ExprUnary) -> Value {
        let span = u.span();
        match u.op {
            UnOp::Neg(_) => {
                if let Expr::Lit(l) = unwrapped(&u.expr) {
                    if matches!(l.lit, Lit::Int(_) | Lit::Float(_)) {
                        return self.lower_signed_lit(&l.lit, true, span);
                    }
                }
                let x = self.operand(&u.expr);
                if let Op::Const { value, weak } = self.graph.node(x).op {
                    let dt = self.graph.node(x).dtype;
                    let value = match value {
                        Scalar::Float(v) => Scalar::Float(-v),
                        // A weak integer stays exact until it meets its dtype; a typed one
                        // wraps in its dtype, as the runtime's `neg`.
                        Scalar::Int(v) if weak => Scalar::Int(v.wrapping_neg()),
                        Scalar::Int(v) => Scalar::Int(v.wrapping_neg()).convert(dt),
                        Scalar::Bool(_) => {
                            self.diag.error(span, "cannot negate a bool");
                            return Value::Tensor(self.poisoned(span));
                        }
                    };
                    return Value::Tensor(self.push(
                        Op::Const { value, weak },
                        vec![],
                        dt,
                        vec![],
                        span,
                    ));
                }
                let x = self.concrete(x);
                let n = self.graph.node(x);
                let r = infer::unary("neg", false, (n.dtype, &n.shape.clone()));
                Value::Tensor(self.typed(Op::Unary(UnaryOp::Neg), vec![x], r, span))
            }
            UnOp::Not(_) => {
                if let Some(tokens) = self.host_expr(&Expr::Unary(u.clone())) {
                    return Value::Host {
                        tokens,
                        dtype: DType::Bool,
                        node: None,
                    };
                }
                let x = self.operand(&u.expr);
                let x = self.concrete(x);
                let n = self.graph.node(x).clone();
                let r = infer::unary_of("!", OperandKind::Bool, (n.dtype, &n.shape));
                Value::Tensor(self.typed(Op::Unary(UnaryOp::LogicalNot), vec![x], r, span))
            }
            // `*w` reads an in-place parameter, as `w` does.
            UnOp::Deref(_) => match self.in_place_name(&u.expr, span) {
                Some(_) => self.lower_expr(&u.expr),
                None => Value::Tensor(self.poisoned(span)),
            },
            _ => {
                self.diag.error(
                    span,
                    "this unary operator is not supported in a `#[graph]` body",
                );
                Value::Tensor(self.poisoned(span))
            }
        }
    }

    pub(super) fn lower_binary(&mut self, b: &syn::ExprBinary) -> Value {
        let span = b.span();
        if matches!(b.op, BinOp::And(_) | BinOp::Or(_)) {
            if let Some(tokens) = self.host_expr(&Expr::Binary(b.clone())) {
                return Value::Host {
                    tokens,
                    dtype: DType::Bool,
                    node: None,
                };
            }
            self.diag.error(span, "`&&` and `||` are only supported between host conditions; on tensors use `select` or `minimum`/`maximum` of casts");
            return Value::Tensor(self.poisoned(span));
        }
        let l = self.operand(&b.left);
        let r = self.operand(&b.right);
        let op = match b.op {
            BinOp::Add(_) => Ok(BinaryOp::Add),
            BinOp::Sub(_) => Ok(BinaryOp::Sub),
            BinOp::Mul(_) => Ok(BinaryOp::Mul),
            BinOp::Div(_) => Ok(BinaryOp::Div),
            BinOp::Rem(_) => Ok(BinaryOp::TruncateMod),
            BinOp::BitAnd(_) => Ok(BinaryOp::LogicalAnd),
            BinOp::BitOr(_) => Ok(BinaryOp::LogicalOr),
            BinOp::BitXor(_) => Ok(BinaryOp::LogicalXor),
            BinOp::Lt(_) => Err(CmpOp::Lt),
            BinOp::Le(_) => Err(CmpOp::Le),
            BinOp::Gt(_) => Err(CmpOp::Gt),
            BinOp::Ge(_) => Err(CmpOp::Ge),
            BinOp::Eq(_) => Err(CmpOp::Eq),
            BinOp::Ne(_) => Err(CmpOp::Ne),
            _ => {
                self.diag.error(span, "this operator is not supported in a `#[graph]` body; supported are `+ - * / %`, `& | ^` (bool) and `< <= > >= == !=`");
                return Value::Tensor(self.poisoned(span));
            }
        };
        // Messages name the operator the user wrote (`+`), not the op behind it (`add`).
        let symbol = b.op.to_token_stream().to_string();
        self.operator = Some(symbol);
        let id = match op {
            Ok(op) => self.binary(op, l, r, span),
            Err(cmp) => self.compare(cmp, l, r, span),
        };
        self.operator = None;
        Value::Tensor(id)
    }

    pub(super) fn binary(&mut self, op: BinaryOp, l: NodeId, r: NodeId, span: Span) -> NodeId {
        if self.is_poisoned(&[l, r]) {
            return self.poisoned(span);
        }
        let (l, r) = self.coerce(l, r, span);
        // Two weak literals make a weak literal (JAX's rule), folded here so it stays weak.
        if let (
            Op::Const {
                value: a,
                weak: true,
            },
            Op::Const {
                value: b,
                weak: true,
            },
        ) = (&self.graph.node(l).op, &self.graph.node(r).op)
        {
            // Weak literals compute in the widest type of their kind (as JAX folds Python
            // scalars); the result is range-checked when it meets its partner's dtype.
            let dt = self.graph.node(l).dtype;
            let wide = if dt.is_float() {
                DType::F64
            } else {
                DType::I64
            };
            if let Some(msg) = crate::passes::fold::int_fold_error(op, *a, *b, wide) {
                self.diag.error(span, msg);
                return self.poisoned(span);
            }
            let folded = match (op, wide) {
                // A literal's power is its value (`pow(2.0, 0.5)` is √2 as f64), rounded when it
                // meets its partner; both the compiled and the eager path see this constant.
                (BinaryOp::Pow, DType::F64) => Some(Scalar::Float(a.as_f64().powf(b.as_f64()))),
                _ => crate::passes::fold::fold_binary(op, *a, *b, wide),
            };
            if let Some(v) = folded {
                return self.push(
                    Op::Const {
                        value: v,
                        weak: true,
                    },
                    vec![],
                    dt,
                    vec![],
                    span,
                );
            }
        }
        let (l, r) = if op.is_logical() {
            (self.concrete(l), self.concrete(r))
        } else {
            (l, r)
        };
        let (nl, nr) = (self.graph.node(l).clone(), self.graph.node(r).clone());
        let name = self
            .operator
            .clone()
            .unwrap_or_else(|| op.name().to_string());
        let res = if op.is_logical() {
            infer::logical(&name, (nl.dtype, &nl.shape), (nr.dtype, &nr.shape))
        } else {
            infer::arithmetic(&name, (nl.dtype, &nl.shape), (nr.dtype, &nr.shape))
        };
        if self.is_poisoned(&[l, r]) {
            return self.poisoned(span);
        }
        if let Ok((dt, _)) = &res {
            if dt.is_int() {
                self.integer_check(op, r, span);
            }
        }
        self.typed(Op::Binary(op), vec![l, r], res, span)
    }

    /// TensorFlow raises on an integer zero divisor and a negative integer exponent: an
    /// integer op that divides (or `pow`) is preceded by a check of its right operand, an
    /// effect that fails with the op's name and line (as the `assert_*` ops do).
    pub(super) fn integer_check(&mut self, op: BinaryOp, operand: NodeId, span: Span) {
        let (kind, message) = match op {
            _ if op.divides() => (
                AssertKind::NonZeroDivisor(op.name()),
                "integer division by zero",
            ),
            BinaryOp::Pow => (
                AssertKind::NonNegativeExponent,
                "integers to negative integer powers are not allowed",
            ),
            _ => return,
        };
        let id = self.push(
            Op::Assert {
                kind,
                message: message.to_string(),
            },
            vec![operand],
            DType::Bool,
            vec![],
            span,
        );
        self.effects.push(id);
    }

    pub(super) fn compare(&mut self, op: CmpOp, l: NodeId, r: NodeId, span: Span) -> NodeId {
        if self.is_poisoned(&[l, r]) {
            return self.poisoned(span);
        }
        let (l, r) = self.coerce(l, r, span);
        let (l, r) = (self.concrete(l), self.concrete(r));
        let (nl, nr) = (self.graph.node(l).clone(), self.graph.node(r).clone());
        let name = self
            .operator
            .clone()
            .unwrap_or_else(|| op.name().to_string());
        let res = infer::compare(&name, (nl.dtype, &nl.shape), (nr.dtype, &nr.shape));
        self.typed(Op::Compare(op), vec![l, r], res, span)
    }
}

impl Lowerer<'_> {
    /// `zeros([dims])`, `ones([dims])`, `fill([dims], v)`; `constant` is `constant.rs`'s.
    pub(super) fn lower_creation(&mut self, lowering: Lowering, call: &Call) -> NodeId {
        let (args, span) = (call.args, call.span);
        if lowering == Lowering::Constant {
            return self.lower_constant(call);
        }
        let Some(dims) = self.dim_list(args[0], false) else {
            return self.poisoned(span);
        };
        let shape: Shape = dims.into_iter().flatten().collect();
        let value = if lowering == Lowering::Fill {
            let v = self.operand(args[1]);
            match call.dtype {
                Some(dt) => self.resolve_weak_to(v, dt, span),
                None => self.concrete(v),
            }
        } else {
            let dt = call.dtype.unwrap_or(DType::F32);
            let one = if lowering == Lowering::Ones { 1.0 } else { 0.0 };
            self.push(
                Op::Const {
                    value: Scalar::Float(one).convert(dt),
                    weak: false,
                },
                vec![],
                dt,
                vec![],
                span,
            )
        };
        if !self.graph.node(value).shape.is_empty() && !self.graph.node(value).poisoned {
            self.diag.error(span, "`fill` takes a scalar value");
            return self.poisoned(span);
        }
        let dt = self.graph.node(value).dtype;
        self.typed(Op::Fill, vec![value], Ok((dt, shape)), span)
    }

    /// A unary op of the table (`exp(x)`).
    pub(super) fn lower_unary_call(&mut self, u: UnaryOp, call: &Call) -> NodeId {
        let x = self.operand(call.args[0]);
        let x = self.concrete(x);
        let n = self.graph.node(x).clone();
        let r = infer::unary_of(u.name(), u.operand_kind(), (n.dtype, &n.shape));
        self.typed(Op::Unary(u), vec![x], r, call.span)
    }

    /// `select(cond, a, b)`.
    pub(super) fn lower_select(&mut self, call: &Call) -> NodeId {
        let (args, span) = (call.args, call.span);
        let cnd = self.operand(args[0]);
        let (a, b) = (self.operand(args[1]), self.operand(args[2]));
        let (a, b) = self.coerce(a, b, span);
        let (a, b) = (self.concrete(a), self.concrete(b));
        let (nc, na, nb) = (
            self.graph.node(cnd).clone(),
            self.graph.node(a).clone(),
            self.graph.node(b).clone(),
        );
        let r = infer::select(
            (nc.dtype, &nc.shape),
            (na.dtype, &na.shape),
            (nb.dtype, &nb.shape),
        );
        self.typed(Op::Select, vec![cnd, a, b], r, span)
    }

    /// `cast::<T>(x)`; a weak literal becomes a constant of `T`.
    pub(super) fn lower_cast(&mut self, call: &Call) -> NodeId {
        let span = call.span;
        let x = self.operand(call.args[0]);
        let dt = call.dtype.expect("the row requires the dtype");
        if self.is_weak(x) && !matches!(self.graph.node(x).op, Op::Host { .. }) {
            let Op::Const { value, .. } = self.graph.node(x).op else {
                unreachable!("weak nodes are constants")
            };
            return self.push(
                Op::Const {
                    value: value.convert(dt),
                    weak: false,
                },
                vec![],
                dt,
                vec![],
                span,
            );
        }
        let shape = self.graph.node(x).shape.clone();
        self.typed(Op::Cast, vec![x], Ok((dt, shape)), span)
    }
}
