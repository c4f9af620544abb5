//! Statements: blocks and their scopes, items, `let` with its annotation and pattern, expression statements.

use super::context::Value;
use super::{const_literal, unwrapped, Lowerer, Span};
use crate::ir::*;
use std::collections::HashMap;
use syn::{Expr, Pat, Stmt};

impl Lowerer<'_> {
    pub(super) fn lower_block(&mut self, block: &syn::Block) -> Value {
        self.scopes.push(HashMap::new());
        let v = self.lower_block_inner(block);
        self.scopes.pop();
        v
    }

    pub(super) fn lower_block_inner(&mut self, block: &syn::Block) -> Value {
        let mut last = Value::Unit;
        let n = block.stmts.len();
        for (i, stmt) in block.stmts.iter().enumerate() {
            last = Value::Unit;
            match stmt {
                Stmt::Local(local) => self.lower_let(local),
                Stmt::Expr(e, semi) => {
                    let v = self.lower_stmt_expr(e);
                    if semi.is_none() && i + 1 == n {
                        last = v;
                    }
                }
                Stmt::Item(item) => self.lower_item(item),
                Stmt::Macro(m) => self.diag.error(
                    m.span(),
                    "macros are not supported in a `#[graph]` body (the graph runs without Rust side effects); use `assert_*` ops for checks",
                ),
            }
        }
        last
    }

    fn lower_item(&mut self, item: &syn::Item) {
        if let syn::Item::Const(c) = item {
            if let Some(v) = const_literal(c) {
                self.consts.insert(c.ident.to_string(), v);
                return;
            }
            self.diag.error(
                c.expr.span(),
                "a `const` in a `#[graph]` body must be a literal",
            );
            return;
        }
        self.diag.error(
            item.span(),
            "items other than `const NAME: T = literal;` are not supported in a `#[graph]` body",
        );
    }

    fn lower_let(&mut self, local: &syn::Local) {
        let Some(init) = &local.init else {
            self.diag.error(local.span(), "`let` without a value is not supported in a `#[graph]` body: write `let mut y = ...;` and reassign it");
            return;
        };
        if let Some((_, d)) = &init.diverge {
            self.diag.error(
                d.span(),
                "`let ... else` is not supported in a `#[graph]` body",
            );
        }
        let (pat, ty) = match &local.pat {
            Pat::Type(pt) => (&*pt.pat, Some(&*pt.ty)),
            p => (p, None),
        };
        if let Some(poisoned) = self.split_count_mismatch(pat, &init.expr) {
            self.bind_pattern(pat, poisoned);
            return;
        }
        let mut value = self.lower_expr(&init.expr);
        if let Some(ty) = ty {
            value = self.check_annotation(value, ty, init.expr.span());
        }
        self.bind_pattern(pat, value);
    }

    /// `let (a, b, c, d) = split(g, 3, -1)`: the count (or the list of sizes) and the names
    /// disagree, which is the mistake to report, not whether 3 divides the axis. Reports it
    /// at the count and returns the poisoned value to bind; `None` when they agree or are not
    /// literals (then `split` and the pattern check the rest).
    fn split_count_mismatch(&mut self, pat: &Pat, init: &Expr) -> Option<Value> {
        let Pat::Tuple(names) = pat else { return None };
        let Expr::Call(call) = unwrapped(init) else {
            return None;
        };
        let Expr::Path(f) = unwrapped(&call.func) else {
            return None;
        };
        if !f.path.is_ident("split") || self.callees.callee("split").is_some() {
            return None;
        }
        let count_arg = call.args.iter().nth(1)?;
        let (count, sizes) = match unwrapped(count_arg) {
            Expr::Array(sizes) => (sizes.elems.len(), true),
            e => (usize::try_from(self.literal_int(e)?).ok()?, false),
        };
        let n = names.elems.len();
        if count == n {
            return None;
        }
        // The operand's own mistakes are reported too.
        let _ = self.lower_expr(&call.args[0]);
        let names_text = if n == 1 {
            "1 name"
        } else {
            &format!("{n} names")
        };
        let msg = if sizes {
            format!("`split` into {count} pieces (one per size) is bound to {names_text} in the `let` pattern; give {n} sizes or bind {count} names")
        } else {
            format!("`split` into {count} pieces is bound to {names_text} in the `let` pattern; split into {n} or bind {count} names")
        };
        self.diag.error(count_arg.span(), msg);
        Some(Value::Tensor(self.poisoned(init.span())))
    }

    /// `let y: Tensor<f32, B, 10> = ...` checks the inferred type against the annotation.
    fn check_annotation(&mut self, value: Value, ty: &syn::Type, span: Span) -> Value {
        let Some((dtype, shape)) =
            crate::signature::parse_tensor_type(ty, self.diag, "a `let` annotation")
        else {
            return value;
        };
        let Some(id) = self.tensor_of(&value, span, "an annotated `let`") else {
            return value;
        };
        let shape: Shape = shape.iter().map(|d| self.subst_dim(d)).collect();
        let id = self.resolve_weak_to(id, dtype, span);
        let n = self.graph.node(id);
        if !n.poisoned && (n.dtype != dtype || n.shape != shape) {
            let msg = format!(
                "the value is {} but the `let` declares {}",
                type_str(n.dtype, &n.shape),
                type_str(dtype, &shape)
            );
            self.diag.error(span, msg);
        }
        Value::Tensor(id)
    }

    fn bind_pattern(&mut self, pat: &Pat, value: Value) {
        match pat {
            Pat::Ident(pi) if pi.by_ref.is_none() && pi.subpat.is_none() => {
                let value = match value {
                    Value::Tensor(id) => Value::Tensor(self.concrete(id)),
                    v => v,
                };
                self.bind(&pi.ident.to_string(), value, pi.mutability.is_some());
            }
            Pat::Wild(_) => {}
            Pat::Tuple(pt) => match value {
                Value::Tuple(vs) if vs.len() == pt.elems.len() => {
                    for (p, v) in pt.elems.iter().zip(vs) {
                        self.bind_pattern(p, v);
                    }
                }
                // An error was reported where the value came from: bind every name, quietly.
                Value::Tensor(id) if self.graph.node(id).poisoned => {
                    for p in &pt.elems {
                        self.bind_pattern(p, Value::Tensor(id));
                    }
                }
                other => {
                    let found = match &other {
                        Value::Tuple(vs) => format!("a tuple of {}", vs.len()),
                        _ => "a single value".to_string(),
                    };
                    self.diag.error(
                        pt.span(),
                        format!(
                            "the tuple pattern has {} elements but the value is {found}",
                            pt.elems.len()
                        ),
                    );
                    let poisoned = Value::Tensor(self.poisoned(pt.span()));
                    for p in &pt.elems {
                        self.bind_pattern(p, poisoned.clone());
                    }
                }
            },
            Pat::Paren(p) => self.bind_pattern(&p.pat, value),
            other => self.diag.error(other.span(), "only names, `_` and tuples of names are supported in `let` patterns of a `#[graph]` body"),
        }
    }

    fn lower_stmt_expr(&mut self, e: &Expr) -> Value {
        match e {
            Expr::Assign(a) => {
                let value = self.lower_expr(&a.right);
                self.assign_to(&a.left, value, a.span());
                Value::Unit
            }
            Expr::ForLoop(f) => {
                self.lower_for(f);
                Value::Unit
            }
            other => self.lower_expr(other),
        }
    }

    /// `place = value`: a variable (`y = ...`), an in-place parameter through `*w = ...`,
    /// `_`, or a tuple of them taking a tuple apart (`(w, m, v) = apply_adam(..)`).
    fn assign_to(&mut self, place: &Expr, value: Value, span: Span) {
        match place {
            Expr::Paren(p) => self.assign_to(&p.expr, value, span),
            Expr::Group(g) => self.assign_to(&g.expr, value, span),
            Expr::Infer(_) => {}
            Expr::Tuple(t) => match value {
                Value::Tuple(vs) if vs.len() == t.elems.len() => {
                    for (p, v) in t.elems.iter().zip(vs) {
                        self.assign_to(p, v, span);
                    }
                }
                // An error was reported where the value came from: assign quietly.
                Value::Tensor(id) if self.graph.node(id).poisoned => {
                    for p in &t.elems {
                        self.assign_to(p, Value::Tensor(id), span);
                    }
                }
                other => {
                    let found = match &other {
                        Value::Tuple(vs) => format!("a tuple of {}", vs.len()),
                        _ => "a single value".to_string(),
                    };
                    self.diag.error(
                        t.span(),
                        format!(
                            "the tuple assigned to has {} elements but the value is {found}",
                            t.elems.len()
                        ),
                    );
                }
            },
            _ => {
                let name = match place {
                    // `*w = ...` assigns an in-place parameter, as `w = ...` does.
                    Expr::Unary(u) if matches!(u.op, syn::UnOp::Deref(_)) => {
                        match self.in_place_name(&u.expr, u.span()) {
                            Some(name) => name,
                            None => return,
                        }
                    }
                    Expr::Path(p) if p.path.get_ident().is_some() => {
                        p.path.get_ident().expect("checked").to_string()
                    }
                    other => {
                        self.diag.error(
                            other.span(),
                            "only a variable, `*w` of an in-place parameter, `_` or a tuple of them can be assigned in a `#[graph]` body (`y = ...`, `(w, m) = ...`)",
                        );
                        return;
                    }
                };
                let value = match value {
                    Value::Tensor(id) => Value::Tensor(self.concrete(id)),
                    v => v,
                };
                self.assign(&name, value, span);
            }
        }
    }
}
