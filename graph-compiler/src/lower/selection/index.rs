//! Indexing with ndarray's `s![..]`: its entries (an index, a range with a step, a new axis), checked against the operand's shape.

use super::slice::slice_shape;
use crate::ir::*;
use crate::lower::{Lowerer, Span, Value};
use proc_macro2::{TokenStream, TokenTree};
use syn::Expr;

/// An index that is known now or read at run time from a rank-0 integer node.
enum IndexValue {
    Static(i64),
    Dynamic(NodeId),
}

/// The entries of `s![...]`: split at top-level commas, each at its `;` (the step).
fn s_entries(tokens: TokenStream) -> Vec<(TokenStream, Option<TokenStream>)> {
    let mut entries = Vec::new();
    let mut range = TokenStream::new();
    let mut step: Option<TokenStream> = None;
    let mut flush = |range: &mut TokenStream, step: &mut Option<TokenStream>| {
        entries.push((std::mem::take(range), step.take()));
    };
    let mut any = false;
    for tt in tokens {
        any = true;
        match &tt {
            TokenTree::Punct(p) if p.as_char() == ',' => flush(&mut range, &mut step),
            TokenTree::Punct(p) if p.as_char() == ';' && step.is_none() => {
                step = Some(TokenStream::new())
            }
            _ => match &mut step {
                Some(s) => s.extend([tt]),
                None => range.extend([tt]),
            },
        }
    }
    if any && (!range.is_empty() || step.is_some()) {
        flush(&mut range, &mut step);
    }
    entries
}

impl Lowerer<'_> {
    /// A static or run-time index: a literal, a `for` variable, a `const`, or a rank-0 integer value.
    fn index_value(&mut self, e: &Expr) -> Option<IndexValue> {
        let id = self.operand(e);
        let n = self.graph.node(id).clone();
        if n.poisoned {
            return None;
        }
        if let Op::Const { value, .. } = n.op {
            return match value {
                Scalar::Int(v) => Some(IndexValue::Static(v)),
                _ => {
                    self.diag.error(
                        e.span(),
                        format!("an index must be an integer, found `{value}`"),
                    );
                    None
                }
            };
        }
        if !n.dtype.is_int() || !n.shape.is_empty() {
            self.diag.error(
                e.span(),
                format!(
                    "an index must be an integer: a literal, a `for` variable, a host integer or a rank-0 integer tensor; found {}",
                    type_str(n.dtype, &n.shape)
                ),
            );
            return None;
        }
        Some(IndexValue::Dynamic(id))
    }

    /// `x[s![...]]`: ndarray's slicing syntax (an index drops the axis; `a..b;step` as ndarray).
    pub(in crate::lower) fn lower_index(&mut self, ix: &syn::ExprIndex) -> Value {
        let span = ix.span();
        let mac = match &*ix.index {
            Expr::Macro(m) if m.mac.path.is_ident("s") => &m.mac,
            other => return self.sel_error(
                other.span(),
                "a tensor is indexed with ndarray's `s![...]` macro, e.g. `x[s![.., t, 0..10;2]]`",
                span,
            ),
        };
        let (x, xn) = self.sel_operand(&ix.expr);
        let all_entries = s_entries(mac.tokens.clone());
        // ndarray's `NewAxis` inserts an axis of size 1 where it stands among the kept axes.
        let is_new_axis = |range: &TokenStream| {
            syn::parse2::<syn::Path>(range.clone()).is_ok_and(|p| p.is_ident("NewAxis"))
        };
        let mut new_axes = Vec::new();
        let mut kept = 0usize;
        let mut entries = Vec::new();
        for (range, step) in all_entries {
            if is_new_axis(&range) && step.is_none() {
                new_axes.push(kept);
                kept += 1;
                continue;
            }
            let is_range =
                syn::parse2::<Expr>(range.clone()).is_ok_and(|e| matches!(e, Expr::Range(_)));
            if is_range {
                kept += 1;
            }
            entries.push((range, step));
        }
        if entries.len() > xn.shape.len() && !xn.poisoned {
            let msg = format!(
                "`s![...]` has {} {} but the tensor is {} (rank {})",
                entries.len(),
                if entries.len() == 1 {
                    "entry"
                } else {
                    "entries"
                },
                type_str(xn.dtype, &xn.shape),
                xn.shape.len()
            );
            return self.sel_error(mac.span(), msg, span);
        }
        let mut axes = Vec::new();
        let mut inputs = vec![x];
        let mut spans = Vec::new();
        for (range, step_tokens) in &entries {
            let entry_span = Span::of(&quote::quote!(#range));
            spans.push(entry_span);
            let expr: Expr = match syn::parse2(range.clone()) {
                Ok(e) => e,
                Err(_) => {
                    return self.sel_error(
                        entry_span,
                        "expected an index or a range (`..`, `a..`, `..b`, `a..b`, `a..=b`), optionally with `;step`",
                        span,
                    )
                }
            };
            let step = match step_tokens {
                None => 1,
                Some(s) => {
                    let step_span = Span::of(s);
                    let parsed = syn::parse2::<Expr>(s.clone()).ok();
                    match parsed.as_ref().and_then(|e| self.literal_int(e)) {
                        Some(v) => v,
                        None => {
                            let expected = "a slice step must be an integer literal or a `const`";
                            let msg = match &parsed {
                                Some(e) => self.int_expected(e, "this slice step", expected),
                                None => expected.to_string(),
                            };
                            return self.sel_error(step_span, msg, span);
                        }
                    }
                }
            };
            let spec = match &expr {
                Expr::Range(r) => {
                    let bound = |lw: &mut Self, e: &Option<Box<Expr>>| -> Result<Option<i64>, ()> {
                        let Some(e) = e else { return Ok(None) };
                        match lw.index_value(e) {
                            Some(IndexValue::Static(v)) => Ok(Some(v)),
                            Some(IndexValue::Dynamic(_)) => {
                                lw.diag.error(e.span(), "a range bound must be known at compile time (a literal, a `for` variable or a `const`); only a single index may be a run-time value");
                                Err(())
                            }
                            None => Err(()),
                        }
                    };
                    let (Ok(start), Ok(end)) = (bound(self, &r.start), bound(self, &r.end)) else {
                        return Value::Tensor(self.poisoned(span));
                    };
                    let end = match (&r.limits, end) {
                        (syn::RangeLimits::Closed(_), Some(-1)) => None,
                        (syn::RangeLimits::Closed(_), Some(e)) => Some(e + 1),
                        (_, e) => e,
                    };
                    SliceSpec::Range {
                        start: start.unwrap_or(0),
                        end,
                        step,
                    }
                }
                index => {
                    if step_tokens.is_some() {
                        return self.sel_error(
                            entry_span,
                            "a step (`;n`) needs a range (`a..b;n`), not an index",
                            span,
                        );
                    }
                    match self.index_value(index) {
                        Some(IndexValue::Static(v)) => SliceSpec::Index(v),
                        Some(IndexValue::Dynamic(id)) => {
                            inputs.push(id);
                            SliceSpec::IndexInput(inputs.len() - 1)
                        }
                        None => return Value::Tensor(self.poisoned(span)),
                    }
                }
            };
            axes.push(spec);
        }
        if xn.poisoned {
            return Value::Tensor(self.poisoned(span));
        }
        match slice_shape(&xn.shape, &axes) {
            Ok(shape) => {
                let op = SelOp::Slice {
                    name: "index",
                    axes,
                };
                let id = self.sel_node(op, inputs, xn.dtype, shape.clone(), span);
                Value::Tensor(self.with_new_axes(id, shape, &new_axes, span))
            }
            Err((a, msg)) => {
                let msg = format!("{msg} (the tensor is {})", type_str(xn.dtype, &xn.shape));
                self.sel_error(spans[a], msg, span)
            }
        }
    }
}
