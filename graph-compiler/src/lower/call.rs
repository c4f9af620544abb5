//! Calls: the dispatch of a call through its row of the op table, which checks the arguments (count, kinds, turbofish) before the family's lowering runs.

use super::args::{padding_of, resize_method_of};
use super::context::Value;
use super::expr::unwrapped;
use super::{Lowerer, Span};
use crate::ir::*;
use crate::ops::{self, Kind, Lowering, OpRow, TypeParam};
use syn::{Expr, Lit};

impl Lowerer<'_> {
    pub(super) fn lower_call(&mut self, c: &syn::ExprCall) -> Value {
        let span = c.span();
        let (name, turbofish) = match &*c.func {
            Expr::Path(p) if p.path.segments.len() == 1 => {
                let seg = &p.path.segments[0];
                let tf = match &seg.arguments {
                    syn::PathArguments::AngleBracketed(a) => match a.args.first() {
                        Some(syn::GenericArgument::Type(syn::Type::Path(tp))) => {
                            tp.path.get_ident().map(|i| (i.to_string(), tp.span()))
                        }
                        _ => None,
                    },
                    _ => None,
                };
                (seg.ident.to_string(), tf)
            }
            // `layers::dense(..)`, `grafo::layers::conv2d(..)`: a function of the layers library.
            Expr::Path(p) if is_layers_path(&p.path) => {
                let name = p.path.segments.last().expect("a segment").ident.to_string();
                if crate::structs::layers::LayerKind::by_function(&name).is_some() {
                    return self.lower_layer_call(&name, c);
                }
                self.diag.error(
                    p.span(),
                    format!("`{name}` is not a function of grafo's layers library; its functions are {}", layer_functions()),
                );
                return Value::Tensor(self.poisoned(span));
            }
            other => {
                self.diag.error(other.span(), "only the ops of grafo's docs/OPS.md, called by their plain name, are supported (`exp(x)`, not a path)");
                return Value::Tensor(self.poisoned(span));
            }
        };
        if self.callees.callee(&name).is_some() {
            return self.lower_inline_call(&name, c);
        }
        let args: Vec<&Expr> = c.args.iter().collect();
        if turbofish.is_none() && self.is_layer_call(&name, &args) {
            return self.lower_layer_call(&name, c);
        }
        let Some(row) = ops::lookup(&name) else {
            self.diag
                .error(c.func.span(), ops::unknown_op_message(&name));
            return Value::Tensor(self.poisoned(span));
        };
        let checked = self.check_call(row, &args, turbofish.as_ref(), span);
        let Some(dtype) = checked else {
            // The operands' own mistakes are reported too, then the call is poisoned.
            for (a, spec) in args.iter().zip(row.args) {
                if matches!(spec.kind, Kind::Tensor | Kind::Scalar) {
                    self.operand(a);
                }
            }
            return match row.family {
                ops::Family::Check => Value::Unit,
                _ => Value::Tensor(self.poisoned(span)),
            };
        };
        let call = Call {
            name: row.name,
            args: &args,
            span,
            dtype,
            turbofish: turbofish.as_ref(),
        };
        match row.lowering {
            Lowering::Constant | Lowering::Zeros | Lowering::Ones | Lowering::Fill => {
                Value::Tensor(self.lower_creation(row.lowering, &call))
            }
            Lowering::Unary(u) => Value::Tensor(self.lower_unary_call(u, &call)),
            Lowering::Binary(op) => {
                let (a, b) = (self.operand(args[0]), self.operand(args[1]));
                Value::Tensor(self.binary(op, a, b, span))
            }
            Lowering::Select => Value::Tensor(self.lower_select(&call)),
            Lowering::Cast => Value::Tensor(self.lower_cast(&call)),
            Lowering::Gelu
            | Lowering::LeakyRelu
            | Lowering::Activation(_)
            | Lowering::ClipByValue
            | Lowering::BatchNormalization
            | Lowering::LayerNorm => Value::Tensor(self.lower_activation_call(row.lowering, &call)),
            Lowering::Reduce(kind) => Value::Tensor(self.lower_reduce(kind, &call)),
            Lowering::ReduceBool { any } => Value::Tensor(self.lower_reduce_bool(any, &call)),
            Lowering::Cumsum => Value::Tensor(self.lower_cumsum(&call)),
            Lowering::TopK => self.lower_top_k(&call),
            Lowering::Norm => Value::Tensor(self.lower_norm(&call)),
            Lowering::MatMul => Value::Tensor(self.lower_matmul(&call)),
            Lowering::Transpose => Value::Tensor(self.lower_transpose(&call)),
            Lowering::Reshape => Value::Tensor(self.lower_reshape(&call)),
            Lowering::BandPart => Value::Tensor(self.lower_band_part(&call)),
            Lowering::Conv2d { depthwise } => Value::Tensor(self.conv_general(depthwise, &call)),
            Lowering::Conv2dTranspose => Value::Tensor(self.lower_conv2d_transpose(&call)),
            Lowering::BiasAdd => Value::Tensor(self.lower_bias_add(&call)),
            Lowering::Pool(kind) => Value::Tensor(self.pool_call(kind, &call)),
            Lowering::Resize => Value::Tensor(self.lower_resize(&call)),
            Lowering::Softmax { log } => Value::Tensor(self.lower_softmax(log, &call)),
            Lowering::Selection(sel) => self.selection_call(sel, &call),
            Lowering::Gradients => self.lower_gradients(&call),
            Lowering::StopGradient => Value::Tensor(self.lower_stop_gradient(&call)),
            Lowering::Loss(loss) => Value::Tensor(self.lower_loss(loss, &call)),
            Lowering::Optimizer(opt) => self.lower_optimizer(opt, &call),
            Lowering::Assert(kind) => {
                self.lower_assert(kind, &call);
                Value::Unit
            }
        }
    }

    /// Checks a call against its row: the argument count, the syntactic kind of each argument
    /// and the turbofish dtype. Returns the dtype (if one was given), or `None` after
    /// reporting the mistake.
    fn check_call(
        &mut self,
        row: &OpRow,
        args: &[&Expr],
        turbofish: Option<&(String, Span)>,
        span: Span,
    ) -> Option<Option<DType>> {
        if !row.accepts(args.len()) {
            self.diag.error(span, row.arity_message(args.len()));
            return None;
        }
        let mut ok = true;
        for (a, spec) in args.iter().zip(row.args) {
            if !self.is_of_kind(spec.kind, a) {
                let what = format!("`{}`'s `{}`", row.name, spec.name);
                let msg = self.int_expected(a, &what, row.kind_message(spec));
                self.diag.error(a.span(), msg);
                ok = false;
            }
        }
        let dtype = match (turbofish, row.type_param) {
            (None, TypeParam::Required) => {
                let msg = format!(
                    "`{}` needs its target dtype: `{}`, e.g. `{}`",
                    row.name,
                    row.call_form(),
                    row.example
                );
                self.diag.error(span, msg);
                return None;
            }
            (None, _) => None,
            (Some((_, tspan)), TypeParam::None) => {
                let msg = format!(
                    "`{}` takes no dtype parameter: `{}`",
                    row.name,
                    row.call_form()
                );
                self.diag.error(*tspan, msg);
                return None;
            }
            (Some((t, tspan)), _) => match DType::from_name(t) {
                Some(dt) => Some(dt),
                None => {
                    self.diag.error(
                        *tspan,
                        format!("unknown dtype `{t}`: one of f32, f64, i32, i64, bool"),
                    );
                    return None;
                }
            },
        };
        ok.then_some(dtype)
    }

    /// Whether `e` has the syntactic form of an argument of `kind` (the op's own rules, such
    /// as a positive stride or an axis in range, are checked by its lowering).
    fn is_of_kind(&self, kind: Kind, e: &Expr) -> bool {
        let e = unwrapped(e);
        let list = matches!(e, Expr::Array(_));
        match kind {
            Kind::Tensor | Kind::Scalar | Kind::Number | Kind::Mask | Kind::Wrt => true,
            Kind::Tensors | Kind::Ints | Kind::Dims | Kind::Pads => list,
            Kind::Axis | Kind::Int => self.literal_int(e).is_some(),
            Kind::Axes | Kind::Window | Kind::Count => list || self.literal_int(e).is_some(),
            Kind::Bool => self.host_literal_bool(e).is_some(),
            Kind::Padding => padding_of(e).is_some(),
            // An explicit `[[top, bottom], [left, right]]` is checked by the op's lowering.
            Kind::PaddingOrPads => padding_of(e).is_some() || list,
            Kind::ResizeMethod => resize_method_of(e).is_some(),
            Kind::Message => matches!(
                e,
                Expr::Lit(syn::ExprLit {
                    lit: Lit::Str(_),
                    ..
                })
            ),
        }
    }
}

/// Whether a call's path is the layers library's: `layers::NAME` or `grafo::layers::NAME`.
fn is_layers_path(path: &syn::Path) -> bool {
    let segs: Vec<String> = path.segments.iter().map(|s| s.ident.to_string()).collect();
    path.segments.iter().all(|s| s.arguments.is_none())
        && match segs.as_slice() {
            [l, _] => l == "layers" && path.leading_colon.is_none(),
            [g, l, _] => g == "grafo" && l == "layers",
            _ => false,
        }
}

/// The functions of the layers library, for messages.
fn layer_functions() -> String {
    let names: Vec<String> = crate::structs::layers::LayerKind::ALL
        .iter()
        .map(|k| format!("`{}`", k.function()))
        .collect();
    names.join(", ")
}

/// A call being lowered, after [`Lowerer::check_call`] accepted its arguments.
pub(super) struct Call<'c> {
    /// The op's name (its row's).
    pub(super) name: &'static str,
    pub(super) args: &'c [&'c Expr],
    pub(super) span: Span,
    /// The turbofish dtype, where the row takes one and the call gave it.
    pub(super) dtype: Option<DType>,
    pub(super) turbofish: Option<&'c (String, Span)>,
}
