//! Lowering of control flow: `for` loops (unrolled), and `if` as a cond node (or a host `if` when the condition is a host value) with AutoGraph's rule for the variables an arm reassigns.

use super::{ArmFrame, Lowerer, Value};
use crate::ir::*;
use std::collections::HashMap;
use syn::{Expr, Pat};

impl Lowerer<'_> {
    pub(super) fn lower_for(&mut self, f: &syn::ExprForLoop) {
        let var = match &*f.pat {
            Pat::Ident(pi) => Some(pi.ident.to_string()),
            Pat::Wild(_) => None,
            other => {
                self.diag
                    .error(other.span(), "a `for` loop variable must be a plain name");
                return;
            }
        };
        let range = match &*f.expr {
            Expr::Range(r) => r,
            other => {
                self.diag.error(other.span(), "only `for i in 0..N` over a literal or const range is supported (it is unrolled at compile time)");
                return;
            }
        };
        let bound = |lw: &mut Self, e: &Option<Box<Expr>>| -> Option<i64> {
            let e = e.as_ref()?;
            match lw.literal_int(e) {
                Some(v) => Some(v),
                None => {
                    let msg = lw.int_expected(e, "this `for` bound", "a `for` bound must be an integer literal or a `const` declared in the body or in its `#[graph] mod` (the loop is unrolled at compile time)");
                    lw.diag.error(e.span(), msg);
                    None
                }
            }
        };
        let start = if range.start.is_some() {
            bound(self, &range.start)
        } else {
            Some(0)
        };
        let end = bound(self, &range.end);
        let (Some(start), Some(end)) = (start, end) else {
            if range.end.is_none() {
                self.diag
                    .error(range.span(), "an unbounded `for` range cannot be unrolled");
            }
            return;
        };
        let closed = matches!(range.limits, syn::RangeLimits::Closed(_));
        // Counted in i128, so `..=i64::MAX` neither overflows nor loses its last value.
        let count = i128::from(end) - i128::from(start) + i128::from(closed);
        if count > 4096 {
            self.diag.error(range.span(), "a `for` loop in a `#[graph]` body is unrolled; more than 4096 iterations is not supported");
            return;
        }
        let values: Vec<i64> = if closed {
            (start..=end).collect()
        } else {
            (start..end).collect()
        };
        for i in values {
            self.scopes.push(HashMap::new());
            if let Some(var) = &var {
                let span = f.pat.span();
                let id = self.push(
                    Op::Const {
                        value: Scalar::Int(i),
                        weak: true,
                    },
                    vec![],
                    DType::I32,
                    vec![],
                    span,
                );
                self.bind(var, Value::Tensor(id), false);
                self.consts.insert(format!("\0loop:{var}"), Scalar::Int(i));
            }
            self.lower_block_inner(&f.body);
            self.scopes.pop();
        }
    }

    pub(super) fn lower_if(&mut self, i: &syn::ExprIf) -> Value {
        let span = i.span();
        // A literal condition is decided now; the dead arm is not even lowered.
        if let Some(b) = self.host_literal_bool(&i.cond) {
            return if b {
                self.lower_block(&i.then_branch)
            } else {
                match &i.else_branch {
                    Some((_, e)) => self.lower_expr(e),
                    None => Value::Unit,
                }
            };
        }
        let predicate = if let Some(tokens) = self.host_expr(&i.cond) {
            Predicate::Host(tokens)
        } else {
            let c = self.operand(&i.cond);
            let n = self.graph.node(c);
            if !n.poisoned && (n.dtype != DType::Bool || !n.shape.is_empty()) {
                let msg = format!(
                    "an `if` condition must be a rank-0 bool tensor (or a host `bool`), found {}; reduce it first, e.g. `reduce_max(x) > 0.0`",
                    type_str(n.dtype, &n.shape)
                );
                self.diag.error(i.cond.span(), msg);
            }
            Predicate::Tensor(c)
        };
        let cond_id = CondId(self.graph.conds.len());
        self.graph.conds.push(Cond {
            predicate,
            region: self.region,
            names: vec![],
            then_outputs: vec![],
            else_outputs: vec![],
            results: vec![],
            then_effects: vec![],
            else_effects: vec![],
            removed: false,
        });
        let snapshot = self.snapshot();
        let (then_val, then_assigned, then_vars, then_effects) =
            self.lower_arm(cond_id, true, |lw| lw.lower_block(&i.then_branch));
        self.restore(&snapshot);
        let (else_val, else_assigned, else_vars, else_effects) = match &i.else_branch {
            Some((_, e)) => self.lower_arm(cond_id, false, |lw| lw.lower_expr(e)),
            None => self.lower_arm(cond_id, false, |_| Value::Unit),
        };
        self.restore(&snapshot);

        // AutoGraph's rule: every outer variable assigned in either arm is an output.
        let mut names: Vec<String> = then_assigned.clone();
        for n in else_assigned {
            if !names.contains(&n) {
                names.push(n);
            }
        }
        let mut then_outs = Vec::new();
        let mut else_outs = Vec::new();
        let mut out_names = Vec::new();
        for name in &names {
            let outer = snapshot
                .iter()
                .rev()
                .find_map(|scope| scope.get(name))
                .cloned();
            let tv = then_vars
                .iter()
                .find(|(n, _)| n == name)
                .map(|(_, v)| v.clone())
                .or_else(|| outer.clone());
            let ev = else_vars
                .iter()
                .find(|(n, _)| n == name)
                .map(|(_, v)| v.clone())
                .or(outer);
            match (tv, ev) {
                (Some(Value::Tensor(t)), Some(Value::Tensor(e))) => {
                    then_outs.push(t);
                    else_outs.push(e);
                    out_names.push(name.clone());
                }
                _ => self.diag.error(span, format!("`{name}` is assigned in an `if` on a tensor but is not a tensor in both arms")),
            }
        }
        let mut value_error = false;
        let value_count = match (&then_val, &else_val) {
            (Value::Unit, Value::Unit) => 0,
            (Value::Tensor(t), Value::Tensor(e)) => {
                then_outs.push(*t);
                else_outs.push(*e);
                out_names.push(String::new());
                1
            }
            (Value::Tuple(ts), Value::Tuple(es)) if ts.len() == es.len() => {
                let mut k = 0;
                for (t, e) in ts.iter().zip(es) {
                    if let (Value::Tensor(t), Value::Tensor(e)) = (t, e) {
                        then_outs.push(*t);
                        else_outs.push(*e);
                        out_names.push(String::new());
                        k += 1;
                    }
                }
                k
            }
            (Value::Tensor(_), Value::Unit) if i.else_branch.is_none() => {
                self.diag.error(span, "an `if` used as a value needs an `else` arm with a value of the same dtype and shape");
                value_error = true;
                0
            }
            _ => {
                self.diag.error(span, "the two arms of this `if` give different kinds of values (a tensor, a tuple or nothing)");
                value_error = true;
                0
            }
        };
        // Both arms must agree on dtype and shape of every output.
        let mut results = Vec::new();
        for k in 0..then_outs.len() {
            let (t, e) = (then_outs[k], else_outs[k]);
            let (t, e) = self.coerce(t, e, span);
            let (t, e) = (self.concrete(t), self.concrete(e));
            then_outs[k] = t;
            else_outs[k] = e;
            let (nt, ne) = (self.graph.node(t).clone(), self.graph.node(e).clone());
            let mut poisoned = nt.poisoned || ne.poisoned;
            if !poisoned && (nt.dtype != ne.dtype || nt.shape != ne.shape) {
                // The cond's result has no one type: later checks on it would only repeat this.
                poisoned = true;
                let what = if out_names[k].is_empty() {
                    "the value".to_string()
                } else {
                    format!("`{}`", out_names[k])
                };
                self.diag.error(
                    span,
                    format!(
                        "the arms of this `if` disagree on {what}: the `if` arm gives {}, the `else` arm gives {}",
                        type_str(nt.dtype, &nt.shape),
                        type_str(ne.dtype, &ne.shape)
                    ),
                );
            }
            let id = self.push(
                Op::CondOut {
                    cond: cond_id,
                    index: k,
                },
                vec![t, e],
                nt.dtype,
                nt.shape.clone(),
                span,
            );
            self.graph.node_mut(id).poisoned = poisoned;
            results.push(id);
        }
        {
            let c = &mut self.graph.conds[cond_id.0];
            c.names = out_names.clone();
            c.then_outputs = then_outs;
            c.else_outputs = else_outs;
            c.results = results.clone();
            c.then_effects = then_effects;
            c.else_effects = else_effects;
        }
        if let Predicate::Tensor(p) = &self.graph.conds[cond_id.0].predicate {
            let p = *p;
            for &r in &results {
                self.graph.node_mut(r).inputs.push(p);
            }
        }
        for (k, name) in names.iter().enumerate() {
            if k < results.len() && out_names[k] == *name {
                self.assign(name, Value::Tensor(results[k]), span);
            }
        }
        let vals: Vec<Value> = results[results.len() - value_count..]
            .iter()
            .map(|&r| Value::Tensor(r))
            .collect();
        if value_error {
            return Value::Tensor(self.poisoned(span));
        }
        match (value_count, &then_val) {
            (0, _) => Value::Unit,
            (_, Value::Tensor(_)) => vals.into_iter().next().unwrap_or(Value::Unit),
            _ => Value::Tuple(vals),
        }
    }

    /// The current values of all variables, scope by scope (to restore between arms).
    pub(super) fn snapshot(&self) -> Vec<HashMap<String, Value>> {
        self.scopes
            .iter()
            .map(|scope| {
                scope
                    .iter()
                    .map(|(k, b)| (k.clone(), b.value.clone()))
                    .collect()
            })
            .collect()
    }

    /// Gives every binding the value it had in `snap`, each in its own scope (a binding
    /// shadowed in an inner scope keeps its own value, not the shadow's).
    pub(super) fn restore(&mut self, snap: &[HashMap<String, Value>]) {
        for (scope, saved) in self.scopes.iter_mut().zip(snap) {
            for (k, b) in scope.iter_mut() {
                if let Some(v) = saved.get(k) {
                    b.value = v.clone();
                }
            }
        }
    }

    /// Lowers one arm in its region; returns its value, the outer names it assigned with their final values, and its effects.
    #[allow(clippy::type_complexity)]
    pub(super) fn lower_arm(
        &mut self,
        cond: CondId,
        then_arm: bool,
        f: impl FnOnce(&mut Self) -> Value,
    ) -> (Value, Vec<String>, Vec<(String, Value)>, Vec<NodeId>) {
        let saved_region = std::mem::replace(&mut self.region, Region::Arm { cond, then_arm });
        let saved_effects = std::mem::take(&mut self.effects);
        self.arms.push(ArmFrame {
            base_depth: self.scopes.len(),
            assigned: vec![],
        });
        let v = f(self);
        let frame = self.arms.pop().expect("pushed above");
        let vars: Vec<(String, Value)> = frame
            .assigned
            .iter()
            .filter_map(|n| self.lookup(n).map(|(_, b)| (n.clone(), b.value.clone())))
            .collect();
        let effects = std::mem::replace(&mut self.effects, saved_effects);
        self.region = saved_region;
        (v, frame.assigned, vars, effects)
    }
}
