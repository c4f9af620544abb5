//! Expressions: operators, paths and names, tensors of values, and host expressions (parameters and consts used as scalars or in host conditions).

use super::context::{Binding, Value};
use super::{Lowerer, Span};
use crate::ir::*;
use proc_macro2::TokenStream;
use quote::quote;
use syn::{Expr, Lit, UnOp};

/// The expression inside the invisible groups a `macro_rules!` fragment arrives in.
pub(super) fn unwrapped(e: &Expr) -> &Expr {
    match e {
        Expr::Group(g) => unwrapped(&g.expr),
        other => other,
    }
}

/// The constants of a dtype a body may name, as Rust spells them (`f32::NEG_INFINITY`,
/// `std::f64::consts::PI`, `i64::MIN`): a value of that dtype, as a typed literal is.
/// `None` when the path does not start with a dtype (after an optional `std`/`core`), an
/// error naming the known ones when it does but names no constant of it.
pub(super) fn dtype_constant(p: &syn::ExprPath) -> Option<Result<(Scalar, DType), String>> {
    if p.qself.is_some() || p.path.segments.iter().any(|s| !s.arguments.is_none()) {
        return None;
    }
    let names: Vec<String> = p
        .path
        .segments
        .iter()
        .map(|s| s.ident.to_string())
        .collect();
    let mut rest: Vec<&str> = names.iter().map(String::as_str).collect();
    if matches!(rest.first(), Some(&("std" | "core"))) && rest.len() > 2 {
        rest.remove(0);
    }
    let dtype = match rest.first() {
        Some(&"f32") => DType::F32,
        Some(&"f64") => DType::F64,
        Some(&"i32") => DType::I32,
        Some(&"i64") => DType::I64,
        _ => return None,
    };
    macro_rules! float_constants {
        ($t:ident, $name:expr, $consts:expr) => {{
            use std::$t::consts as c;
            let v: Option<$t> = match ($consts, $name) {
                (false, "INFINITY") => Some($t::INFINITY),
                (false, "NEG_INFINITY") => Some($t::NEG_INFINITY),
                (false, "NAN") => Some($t::NAN),
                (false, "MAX") => Some($t::MAX),
                (false, "MIN") => Some($t::MIN),
                (false, "MIN_POSITIVE") => Some($t::MIN_POSITIVE),
                (false, "EPSILON") => Some($t::EPSILON),
                (true, "PI") => Some(c::PI),
                (true, "TAU") => Some(c::TAU),
                (true, "E") => Some(c::E),
                (true, "SQRT_2") => Some(c::SQRT_2),
                (true, "FRAC_1_SQRT_2") => Some(c::FRAC_1_SQRT_2),
                (true, "FRAC_2_SQRT_PI") => Some(c::FRAC_2_SQRT_PI),
                (true, "FRAC_1_PI") => Some(c::FRAC_1_PI),
                (true, "FRAC_2_PI") => Some(c::FRAC_2_PI),
                (true, "FRAC_PI_2") => Some(c::FRAC_PI_2),
                (true, "FRAC_PI_3") => Some(c::FRAC_PI_3),
                (true, "FRAC_PI_4") => Some(c::FRAC_PI_4),
                (true, "FRAC_PI_6") => Some(c::FRAC_PI_6),
                (true, "FRAC_PI_8") => Some(c::FRAC_PI_8),
                (true, "LN_2") => Some(c::LN_2),
                (true, "LN_10") => Some(c::LN_10),
                (true, "LOG2_E") => Some(c::LOG2_E),
                (true, "LOG2_10") => Some(c::LOG2_10),
                (true, "LOG10_E") => Some(c::LOG10_E),
                (true, "LOG10_2") => Some(c::LOG10_2),
                _ => None,
            };
            v.map(|v| Scalar::Float(f64::from(v)))
        }};
    }
    let value = match (dtype, &rest[1..]) {
        (DType::F32, [name]) => float_constants!(f32, *name, false),
        (DType::F32, ["consts", name]) => float_constants!(f32, *name, true),
        (DType::F64, [name]) => float_constants!(f64, *name, false),
        (DType::F64, ["consts", name]) => float_constants!(f64, *name, true),
        (DType::I32, ["MAX"]) => Some(Scalar::Int(i32::MAX.into())),
        (DType::I32, ["MIN"]) => Some(Scalar::Int(i32::MIN.into())),
        (DType::I64, ["MAX"]) => Some(Scalar::Int(i64::MAX)),
        (DType::I64, ["MIN"]) => Some(Scalar::Int(i64::MIN)),
        _ => None,
    };
    Some(value.map(|v| (v, dtype)).ok_or_else(|| {
        let known = if dtype.is_float() {
            "INFINITY, NEG_INFINITY, NAN, MAX, MIN, MIN_POSITIVE, EPSILON and those of `consts` (PI, E, LN_2, ...)"
        } else {
            "MAX and MIN"
        };
        format!(
            "`{}` is not a constant of {dtype} grafo knows; it knows {dtype}'s {known}",
            names.join("::")
        )
    }))
}

impl Lowerer<'_> {
    pub(super) fn literal_int(&self, e: &Expr) -> Option<i64> {
        match e {
            Expr::Lit(l) => match &l.lit {
                Lit::Int(i) => i.base10_parse::<i64>().ok(),
                _ => None,
            },
            // The magnitude of `-9223372036854775808` (i64::MIN) is beyond i64 itself.
            Expr::Unary(u) if matches!(u.op, UnOp::Neg(_)) => match unwrapped(&u.expr) {
                Expr::Lit(syn::ExprLit {
                    lit: Lit::Int(i), ..
                }) => i
                    .base10_parse::<u64>()
                    .ok()
                    .and_then(|m| i64::try_from(-i128::from(m)).ok()),
                inner => self.literal_int(inner).and_then(i64::checked_neg),
            },
            Expr::Paren(p) => self.literal_int(&p.expr),
            Expr::Group(g) => self.literal_int(&g.expr),
            Expr::Path(p) => {
                if let Some(Ok((Scalar::Int(v), _))) = dtype_constant(p) {
                    return Some(v);
                }
                match self.consts.get(&p.path.get_ident()?.to_string()) {
                    Some(Scalar::Int(v)) => Some(*v),
                    _ => None,
                }
            }
            _ => None,
        }
    }

    /// Where an integer literal is expected (a step, a window, a padding, an axis), the
    /// message for one that is an integer literal but beyond i64, so it is not told it "must
    /// be an integer literal"; `None` for any other expression.
    pub(super) fn int_out_of_range(&self, e: &Expr, what: &str) -> Option<String> {
        let (sign, lit) = match unwrapped(e) {
            Expr::Unary(u) if matches!(u.op, UnOp::Neg(_)) => ("-", unwrapped(&u.expr)),
            other => ("", other),
        };
        let Expr::Lit(syn::ExprLit {
            lit: Lit::Int(i), ..
        }) = lit
        else {
            return None;
        };
        if self.literal_int(e).is_some() {
            return None;
        }
        Some(format!(
            "{what} is out of range: the integer literal `{sign}{}` does not fit i64, the widest integer dtype ({})",
            i.base10_digits(),
            super::weak::range_text(DType::I64)
        ))
    }

    /// [`Self::int_out_of_range`]'s message, or `expected` for an expression that is no
    /// integer literal at all.
    pub(super) fn int_expected(&self, e: &Expr, what: &str, expected: impl Into<String>) -> String {
        self.int_out_of_range(e, what)
            .unwrap_or_else(|| expected.into())
    }

    // ----- expressions ---------------------------------------------------------------------

    pub(super) fn tensor_of(&mut self, v: &Value, span: Span, what: &str) -> Option<NodeId> {
        match v {
            Value::Tensor(id) => Some(*id),
            Value::Host {
                dtype,
                node,
                tokens,
            } => {
                if let Some(n) = node {
                    return Some(*n);
                }
                let id = self.push(
                    Op::Host {
                        expr: tokens.to_string(),
                    },
                    vec![],
                    *dtype,
                    vec![],
                    span,
                );
                self.graph.node_mut(id).name = Some(tokens.to_string());
                Some(id)
            }
            Value::Tuple(_) => {
                self.diag
                    .error(span, format!("{what} must be a tensor, found a tuple"));
                None
            }
            Value::Unit => {
                self.diag.error(span, format!("{what} must be a tensor, found no value (an `assert_*` or an `if` without a value)"));
                None
            }
            Value::Struct { ty, .. } => {
                self.diag.error(span, format!("{what} must be a tensor, found {} (a parameter struct: read one of its tensors, `p.w`)", super::structs::a_struct(ty)));
                None
            }
            Value::Array(vs) => {
                self.diag.error(span, format!("{what} must be a tensor, found an array of {} values (index it, `p.blocks[i]`)", vs.len()));
                None
            }
        }
    }

    pub(super) fn operand(&mut self, e: &Expr) -> NodeId {
        let v = self.lower_expr(e);
        match self.tensor_of(&v, e.span(), "an operand") {
            Some(id) => id,
            None => self.poisoned(e.span()),
        }
    }

    pub(super) fn lower_expr(&mut self, e: &Expr) -> Value {
        match e {
            Expr::Lit(l) => self.lower_lit(&l.lit),
            Expr::Path(p) => self.lower_path(p),
            Expr::Paren(p) => self.lower_expr(&p.expr),
            Expr::Group(g) => self.lower_expr(&g.expr),
            Expr::Block(b) if b.label.is_none() && b.unsafe_token_is_none() => {
                self.lower_block(&b.block)
            }
            Expr::Tuple(t) => Value::Tuple(t.elems.iter().map(|e| self.lower_expr(e)).collect()),
            Expr::Field(f) => {
                let base = self.lower_expr(&f.base);
                match (&f.member, base) {
                    (syn::Member::Unnamed(i), Value::Tuple(vs))
                        if (i.index as usize) < vs.len() =>
                    {
                        vs[i.index as usize].clone()
                    }
                    (member, base @ (Value::Struct { .. } | Value::Array(_))) => {
                        self.lower_struct_field(f, member, base)
                    }
                    (_, Value::Tensor(id)) if self.graph.node(id).poisoned => {
                        Value::Tensor(self.poisoned(f.span()))
                    }
                    _ => {
                        self.diag
                            .error(f.span(), "field access is only supported on tuples (`t.0`)");
                        Value::Tensor(self.poisoned(f.span()))
                    }
                }
            }
            Expr::Binary(b) => self.lower_binary(b),
            Expr::Unary(u) => self.lower_unary(u),
            Expr::Call(c) => self.lower_call(c),
            Expr::Index(ix) if !super::structs::is_slice(ix) => self.lower_array_index(ix),
            Expr::Index(ix) => self.lower_index(ix),
            Expr::Struct(s) => self.lower_struct_literal(s),
            Expr::If(i) => self.lower_if(i),
            Expr::Assign(_) | Expr::ForLoop(_) => {
                self.diag.error(
                    e.span(),
                    "assignments and `for` loops are statements here; they have no value",
                );
                Value::Unit
            }
            other => {
                let what = match other {
                    Expr::MethodCall(m) => {
                        format!("method calls (`.{}()`) are not supported", m.method)
                    }
                    Expr::Loop(_) => "`loop` is not supported".into(),
                    Expr::While(_) => "`while` is not supported".into(),
                    Expr::Match(_) => "`match` is not supported".into(),
                    Expr::Return(_) => "early `return` is not supported".into(),
                    Expr::Closure(_) => "closures are not supported".into(),
                    Expr::Macro(_) => "macros are not supported".into(),
                    Expr::Reference(_) => "references are not supported".into(),
                    Expr::Break(_) | Expr::Continue(_) => {
                        "`break` and `continue` are not supported".into()
                    }
                    Expr::Try(_) => "the `?` operator is not supported".into(),
                    Expr::Array(_) => {
                        "array literals are only supported as shape or axis lists of an op".into()
                    }
                    _ => "this expression is not supported".into(),
                };
                self.diag.error(
                    other.span(),
                    format!(
                        "{what} in a `#[graph]` body; supported are `let`, `let mut` and reassignment, blocks, tuples, the operators `+ - * / %`, comparisons and `& | ^ !` on bools, the ops of grafo's docs/OPS.md called as functions (`exp(x)`, `matmul(a, b)`), `if` and `for i in 0..N`"
                    ),
                );
                Value::Tensor(self.poisoned(other.span()))
            }
        }
    }

    fn lower_path(&mut self, p: &syn::ExprPath) -> Value {
        let span = p.span();
        let Some(id) = p.path.get_ident() else {
            match dtype_constant(p) {
                Some(Ok((value, dtype))) => {
                    let id = self.push(Op::Const { value, weak: false }, vec![], dtype, vec![], span);
                    return Value::Tensor(id);
                }
                Some(Err(msg)) => self.diag.error(span, msg),
                None => self.diag.error(
                    span,
                    "paths are not values in a `#[graph]` body; use a parameter or `let` name (or a constant of a dtype, `f32::NEG_INFINITY`, `i32::MAX`)",
                ),
            }
            return Value::Tensor(self.poisoned(span));
        };
        let name = id.to_string();
        if let Some((_, b)) = self.lookup(&name) {
            return match &b.value {
                Value::Host { tokens, dtype, .. } => {
                    let (tokens, dtype) = (tokens.clone(), *dtype);
                    let param_node = self.push(
                        Op::Host {
                            expr: tokens.to_string(),
                        },
                        vec![],
                        dtype,
                        vec![],
                        span,
                    );
                    self.graph.node_mut(param_node).name = Some(name);
                    Value::Host {
                        tokens,
                        dtype,
                        node: Some(param_node),
                    }
                }
                v => v.clone(),
            };
        }
        if let Some(v) = self.consts.get(&name).copied() {
            let dtype = match v {
                Scalar::Float(_) => DType::F32,
                Scalar::Int(_) => DType::I32,
                Scalar::Bool(_) => DType::Bool,
            };
            let weak = !matches!(v, Scalar::Bool(_));
            return Value::Tensor(self.push(
                Op::Const { value: v, weak },
                vec![],
                dtype,
                vec![],
                span,
            ));
        }
        if self.symbols.contains(&name) {
            self.diag.error(span, format!("`{name}` is a symbolic dim; it is only usable in shapes (`reshape(x, [{name}, 784])`)"));
        } else {
            self.diag.error(span, format!("cannot find `{name}` in this `#[graph]` body: values are parameters, `let` bindings and `const` literals"));
        }
        Value::Tensor(self.poisoned(span))
    }

    /// Tries to read `e` as a host-only expression (host parameters, consts, literals).
    pub(super) fn host_expr(&self, e: &Expr) -> Option<TokenStream> {
        match e {
            Expr::Lit(l) => match &l.lit {
                Lit::Int(_) | Lit::Float(_) | Lit::Bool(_) => Some(quote!(#l)),
                _ => None,
            },
            Expr::Path(p) => {
                let id = p.path.get_ident()?;
                let name = id.to_string();
                match self.lookup(&name) {
                    Some((
                        _,
                        Binding {
                            value: Value::Host { tokens, .. },
                            ..
                        },
                    )) => Some(tokens.clone()),
                    Some(_) => None,
                    None => {
                        let v = self.consts.get(&name)?;
                        Some(match v {
                            Scalar::Float(f) => quote!(#f),
                            Scalar::Int(i) => quote!(#i),
                            Scalar::Bool(b) => quote!(#b),
                        })
                    }
                }
            }
            Expr::Paren(p) => self.host_expr(&p.expr).map(|t| quote!((#t))),
            Expr::Group(g) => self.host_expr(&g.expr).map(|t| quote!((#t))),
            Expr::Unary(u) => {
                let inner = self.host_expr(&u.expr)?;
                let op = &u.op;
                Some(quote!(#op #inner))
            }
            Expr::Binary(b) => {
                let (l, r) = (self.host_expr(&b.left)?, self.host_expr(&b.right)?);
                let op = &b.op;
                Some(quote!((#l #op #r)))
            }
            _ => None,
        }
    }

    pub(super) fn host_literal_bool(&self, e: &Expr) -> Option<bool> {
        match e {
            Expr::Lit(l) => match &l.lit {
                Lit::Bool(b) => Some(b.value),
                _ => None,
            },
            Expr::Paren(p) => self.host_literal_bool(&p.expr),
            Expr::Group(g) => self.host_literal_bool(&g.expr),
            Expr::Path(p) => match self.consts.get(&p.path.get_ident()?.to_string()) {
                Some(Scalar::Bool(b)) => Some(*b),
                _ => None,
            },
            Expr::Unary(u) if matches!(u.op, UnOp::Not(_)) => {
                self.host_literal_bool(&u.expr).map(|b| !b)
            }
            _ => None,
        }
    }

    // ----- if / cond -----------------------------------------------------------------------

    // ----- op calls ------------------------------------------------------------------------
}

trait UnsafeBlock {
    fn unsafe_token_is_none(&self) -> bool;
}

impl UnsafeBlock for syn::ExprBlock {
    fn unsafe_token_is_none(&self) -> bool {
        true
    }
}
