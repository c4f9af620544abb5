//! The scalar code of one elementwise op: literals of each dtype and each op's expression over its operands' expressions (shared by the fused loops and the eager body).

use crate::emit::{elem_ty, format_ident, quote};
use crate::ir::*;
use proc_macro2::{Ident, TokenStream};

/// The `Numeric` trait path, for integer arithmetic with the runtime's semantics.
pub(super) fn numeric() -> TokenStream {
    quote!(::grafo::__private::Numeric)
}

/// A literal of `dtype` with value `s`.
pub fn literal(s: Scalar, dtype: DType) -> TokenStream {
    match (s.convert(dtype), dtype) {
        // A negative value is spelled `(-m)`: a literal token cannot carry the sign of -0.0.
        // Only a finite value becomes a literal token (`quote` panics on others).
        (Scalar::Float(x), DType::F32) => {
            let x32 = x as f32;
            let nan = (x32.to_bits() != f32::NAN.to_bits()).then(|| x32.to_bits());
            float_literal(x, nan, quote!(f32), || {
                let m = x32.abs();
                if x.is_sign_negative() {
                    quote!((-#m))
                } else {
                    quote!(#m)
                }
            })
        }
        (Scalar::Float(x), _) => {
            let nan = (x.to_bits() != f64::NAN.to_bits()).then(|| x.to_bits());
            float_literal(x, nan, quote!(f64), || {
                let m = x.abs();
                if x.is_sign_negative() {
                    quote!((-#m))
                } else {
                    quote!(#m)
                }
            })
        }
        (Scalar::Int(x), DType::I32) => {
            let x = x as i32;
            quote!(#x)
        }
        (Scalar::Int(x), _) => quote!(#x),
        (Scalar::Bool(b), _) => quote!(#b),
    }
}

/// A float literal, spelling the infinities as the type's constants and NaN as `NAN`, or by
/// its bits (`nan_bits`) when they are not `NAN`'s: a NaN folded from `0.0 * inf` has the
/// sign the hardware gave it, and the eager path computes the same one at run time.
fn float_literal<B: quote::ToTokens>(
    x: f64,
    nan_bits: Option<B>,
    ty: TokenStream,
    finite: impl FnOnce() -> TokenStream,
) -> TokenStream {
    if x.is_nan() {
        match nan_bits {
            None => quote!(#ty::NAN),
            Some(bits) => quote!(#ty::from_bits(#bits)),
        }
    } else if x == f64::INFINITY {
        quote!(#ty::INFINITY)
    } else if x == f64::NEG_INFINITY {
        quote!(#ty::NEG_INFINITY)
    } else {
        finite()
    }
}

/// `tokens` (a host expression read back from its text) with each name of a host parameter
/// replaced by the parameter's own identifier, so it resolves with the parameter's hygiene
/// (a name from a `macro_rules!` caller, `$s:ident`, is not visible under another span).
fn with_host_idents(tokens: TokenStream, idents: &[Ident]) -> TokenStream {
    use proc_macro2::{Group, TokenTree};
    tokens
        .into_iter()
        .map(|tt| match tt {
            TokenTree::Ident(i) => match idents.iter().find(|p| **p == i) {
                Some(p) => TokenTree::Ident(p.clone()),
                None => TokenTree::Ident(i),
            },
            TokenTree::Group(g) => {
                let mut inner = Group::new(g.delimiter(), with_host_idents(g.stream(), idents));
                inner.set_span(g.span());
                TokenTree::Group(inner)
            }
            other => other,
        })
        .collect()
}

/// The scalar expression of one elementwise op over already-computed operand expressions.
pub fn scalar_op(graph: &Graph, id: NodeId, args: &[TokenStream]) -> TokenStream {
    let node = graph.node(id);
    let dt = node.dtype;
    let t = elem_ty(dt);
    let num = numeric();
    let float = dt.is_float();
    let suffix = if dt == DType::F64 { "f64" } else { "f32" };
    let math = |name: &str| {
        let f = format_ident!("{}_{}", name, suffix);
        quote!(::grafo::__private::math::#f)
    };
    match &node.op {
        Op::Const { value, .. } => literal(*value, dt),
        Op::Host { expr } => {
            let e: TokenStream = expr
                .parse()
                .unwrap_or_else(|_| quote!(compile_error!("bad host expression")));
            let e = with_host_idents(e, &graph.host_idents);
            if dt == DType::Bool {
                quote!((#e))
            } else {
                quote!(((#e) as #t))
            }
        }
        Op::Fill => args[0].clone(),
        Op::Unary(u) => {
            let a = &args[0];
            match u {
                UnaryOp::Abs if float => quote!(#a.abs()),
                UnaryOp::Abs => quote!(#num::abs(#a)),
                UnaryOp::Neg if float => quote!((-#a)),
                UnaryOp::Neg => quote!(#num::neg(#a)),
                UnaryOp::Square if float => quote!((#a * #a)),
                UnaryOp::Square => quote!(#num::mul(#a, #a)),
                UnaryOp::Relu if float => quote!((if #a < (0 as #t) { 0 as #t } else { #a })),
                UnaryOp::Relu => quote!((if #a < 0 { 0 } else { #a })),
                UnaryOp::Sqrt => quote!(#a.sqrt()),
                UnaryOp::Rsqrt => {
                    let f = math("rsqrt");
                    quote!(#f(#a))
                }
                UnaryOp::Exp
                | UnaryOp::Log
                | UnaryOp::Tanh
                | UnaryOp::Sigmoid
                | UnaryOp::Sin
                | UnaryOp::Cos
                | UnaryOp::Erf
                | UnaryOp::Gelu
                | UnaryOp::Softplus
                | UnaryOp::Elu => {
                    let f = math(u.name());
                    quote!(#f(#a))
                }
                UnaryOp::GeluTanh => {
                    let f = math("gelu_tanh");
                    quote!(#f(#a))
                }
                UnaryOp::LogicalNot => quote!((!#a)),
                UnaryOp::Relu6 | UnaryOp::Sign | UnaryOp::Round => {
                    let f = format_ident!("{}_", u.name());
                    quote!(<#t as ::grafo::__private::math::NumberMath>::#f(#a))
                }
                UnaryOp::Floor
                | UnaryOp::Ceil
                | UnaryOp::Log1p
                | UnaryOp::Expm1
                | UnaryOp::Reciprocal => {
                    let f = math(u.name());
                    quote!(#f(#a))
                }
            }
        }
        Op::Binary(b) => {
            let (x, y) = (&args[0], &args[1]);
            match b {
                BinaryOp::Add if float => quote!((#x + #y)),
                BinaryOp::Sub if float => quote!((#x - #y)),
                BinaryOp::Mul if float => quote!((#x * #y)),
                BinaryOp::Div if float => quote!((#x / #y)),
                // Float `pow` is the runtime's `Numeric::pow` on both paths: its exponents 2
                // and 0.5 are exact special cases (x * x, and a sqrt that keeps pow's -0 and
                // -inf), which a constant exponent reduces to after inlining.
                BinaryOp::Add => quote!(#num::add(#x, #y)),
                BinaryOp::Sub => quote!(#num::sub(#x, #y)),
                BinaryOp::Mul => quote!(#num::mul(#x, #y)),
                BinaryOp::Div => quote!(#num::div(#x, #y)),
                BinaryOp::Pow => quote!(#num::pow(#x, #y)),
                BinaryOp::Maximum => quote!(#num::maximum(#x, #y)),
                BinaryOp::Minimum => quote!(#num::minimum(#x, #y)),
                BinaryOp::TruncateDiv => quote!(#num::truncdiv(#x, #y)),
                BinaryOp::TruncateMod => quote!(#num::truncmod(#x, #y)),
                BinaryOp::FloorDiv => quote!(#num::floordiv(#x, #y)),
                BinaryOp::FloorMod => quote!(#num::floormod(#x, #y)),
                BinaryOp::LeakyRelu => quote!(::grafo::eager::leaky_relu_scalar(#x, #y)),
                BinaryOp::LogicalAnd => quote!((#x & #y)),
                BinaryOp::LogicalOr => quote!((#x | #y)),
                BinaryOp::LogicalXor => quote!((#x ^ #y)),
            }
        }
        Op::Compare(c) => {
            let (x, y) = (&args[0], &args[1]);
            match c {
                CmpOp::Lt => quote!((#x < #y)),
                CmpOp::Le => quote!((#x <= #y)),
                CmpOp::Gt => quote!((#x > #y)),
                CmpOp::Ge => quote!((#x >= #y)),
                CmpOp::Eq => quote!((#x == #y)),
                CmpOp::Ne => quote!((#x != #y)),
            }
        }
        Op::Select => {
            let (c, x, y) = (&args[0], &args[1], &args[2]);
            quote!((if #c { #x } else { #y }))
        }
        Op::Cast => {
            let a = &args[0];
            let from = elem_ty(graph.node(node.inputs[0]).dtype);
            quote!(<#from as ::grafo::__private::dtype::CastTo<#t>>::cast_to(#a))
        }
        Op::BiasAdd => {
            let (x, y) = (&args[0], &args[1]);
            if float {
                quote!((#x + #y))
            } else {
                quote!(#num::add(#x, #y))
            }
        }
        other => {
            let msg = format!("internal: `{}` is not elementwise", other.name());
            quote!(compile_error!(#msg))
        }
    }
}
