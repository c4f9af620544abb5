//! Reverse-mode differentiation at expansion time: `gradients(y, xs [, grad_ys])` (TF1's `tf.gradients`) and `stop_gradient(x)`.
//!
//! The call is lowered like any other: when the lowering reaches it, the forward graph up to
//! `y` already exists, so the adjoints are built as ordinary nodes, in reverse topological
//! order, with the rules of `rules.rs` (one per op, listed in `docs/OPS.md`'s gradient column).
//! The backward nodes then go through the same passes as the forward ones (folding, CSE, DCE,
//! fusion, the schedule and the buffer plan): nothing of the differentiation is left at run time.
//!
//! - A cond node (`if` on a tensor) gets a backward cond on the same predicate: only the
//!   backward of the taken arm runs. Values of the forward arm that the backward arm reads are
//!   exported as extra outputs of the forward cond (zeros from the other arm), TF's `cond_v2`.
//! - An unrolled `for` and an inlined call are plain nodes: backpropagation through time and
//!   through calls needs nothing more.
//! - A value that does not depend on an `x` gives that `x` a zero gradient (TF's
//!   `unconnected_gradients='zero'`); integer and bool values carry no gradient.

use super::{Call, Lowerer, Span, Value};
use crate::ir::*;
use std::collections::{BTreeMap, HashMap};
use syn::Expr;

mod nn;
mod rules;
mod selection;

/// The adjoints built so far, keyed by forward node (each already summed over its users).
pub(super) type Adjoints = BTreeMap<NodeId, NodeId>;

/// What one differentiation knows about the forward graph: which nodes carry a gradient.
pub(super) struct Sweep {
    /// The number of forward nodes (backward ones are pushed after them).
    forward_len: usize,
    /// The number of conds before the sweep (backward conds are pushed after them).
    forward_conds: usize,
    /// `depends[i]`: node `i` is a float value that depends on an `x` (not through `stop_gradient`).
    depends: Vec<bool>,
    /// `needed[i]`: `y` depends on node `i`.
    needed: Vec<bool>,
    /// The span of the `gradients` call: every backward node and error points at it.
    pub(super) span: Span,
    /// Forward values of a cond arm exported to the region that reads them, by (node, region).
    exported: HashMap<(NodeId, Region), NodeId>,
}

impl Sweep {
    /// Whether `id` is a forward node on a path from an `x` to `y`.
    pub(super) fn active(&self, id: NodeId) -> bool {
        id.0 < self.forward_len && self.depends[id.0] && self.needed[id.0]
    }
}

impl Lowerer<'_> {
    /// `stop_gradient(x)`: `x` itself, through which `gradients` passes nothing.
    pub(super) fn lower_stop_gradient(&mut self, call: &Call) -> NodeId {
        let x = self.operand(call.args[0]);
        if self.is_poisoned(&[x]) {
            return self.poisoned(call.span);
        }
        let n = self.graph.node(x).clone();
        let id = self.push(Op::Reshape, vec![x], n.dtype, n.shape, call.span);
        self.stopped.insert(id);
        id
    }

    /// `gradients(y, x)`, `gradients(y, (x1, x2, ...))` and `gradients(y, xs, grad_ys)`.
    pub(super) fn lower_gradients(&mut self, call: &Call) -> Value {
        let span = call.span;
        let y = self.operand(call.args[0]);
        let xs_expr = super::unwrapped(call.args[1]);
        let (elems, single): (Vec<&Expr>, bool) = match xs_expr {
            Expr::Tuple(t) => (t.elems.iter().collect(), false),
            Expr::Array(a) => (a.elems.iter().collect(), false),
            e => (vec![e], true),
        };
        // Each x is a tensor or a parameter struct (`p`, `p.hidden`), whose gradient is a
        // struct of the same shape: its leaves are differentiated one by one.
        let mut xs: Vec<(NodeId, Span)> = Vec::new();
        let templates: Vec<Value> = elems
            .iter()
            .map(|e| self.gradient_target(e, &mut xs))
            .collect();
        let nest = |grads: Vec<Value>| {
            let mut grads = grads.into_iter();
            let mut vs: Vec<Value> = templates
                .iter()
                .map(|t| {
                    super::structs::replace_leaves(t, &mut || grads.next().unwrap_or(Value::Unit))
                })
                .collect();
            if single {
                vs.pop().unwrap_or(Value::Unit)
            } else {
                Value::Tuple(vs)
            }
        };
        let grad_y = call
            .args
            .get(2)
            .map(|e| (self.operand(e), crate::ir::Spanned::span(*e)));
        let poisoned_result = |lw: &mut Self| {
            let ids: Vec<Value> = xs
                .iter()
                .map(|_| Value::Tensor(lw.poisoned(span)))
                .collect();
            nest(ids)
        };
        let mut ok = !self.is_poisoned(&[y]);
        let yn = self.graph.node(y).clone();
        if ok && !yn.dtype.is_float() {
            let msg = format!(
                "`gradients` differentiates a float value: `y` is {}; convert it with `cast::<f32>(...)` first",
                type_str(yn.dtype, &yn.shape)
            );
            self.diag.error(crate::ir::Spanned::span(call.args[0]), msg);
            ok = false;
        }
        for &(x, xspan) in &xs {
            let n = self.graph.node(x);
            if n.poisoned {
                ok = false;
            } else if !n.dtype.is_float() {
                let msg = format!(
                    "`gradients` with respect to {} is not defined: only float tensors have gradients (TF returns None for integer and bool tensors)",
                    type_str(n.dtype, &n.shape)
                );
                self.diag.error(xspan, msg);
                ok = false;
            }
        }
        if let Some((g, gspan)) = grad_y {
            let gn = self.graph.node(g).clone();
            if !gn.poisoned
                && ok
                && (gn.dtype != yn.dtype || gn.shape != yn.shape)
                && !self.is_weak(g)
            {
                let msg = format!(
                    "`gradients`' `grad_ys` must have `y`'s dtype and shape, {}; found {}",
                    type_str(yn.dtype, &yn.shape),
                    type_str(gn.dtype, &gn.shape)
                );
                self.diag.error(gspan, msg);
                ok = false;
            }
        }
        if !ok {
            return poisoned_result(self);
        }
        let saved_operator = self.operator.take();
        let seed = match grad_y {
            Some((g, _)) => {
                let g = self.resolve_weak_to(g, yn.dtype, span);
                if self.graph.node(g).shape == yn.shape {
                    g
                } else {
                    let one = self.constant(1.0, yn.dtype, span);
                    let ones = self.fill(one, yn.shape.clone(), span);
                    self.binary(BinaryOp::Mul, g, ones, span)
                }
            }
            None => {
                let one = self.constant(1.0, yn.dtype, span);
                if yn.shape.is_empty() {
                    one
                } else {
                    self.fill(one, yn.shape.clone(), span)
                }
            }
        };
        let x_ids: Vec<NodeId> = xs.iter().map(|&(x, _)| x).collect();
        let mut sweep = self.plan_sweep(y, &x_ids, span);
        let mut adj = Adjoints::new();
        adj.insert(y, seed);
        let region = self.region;
        let result = self.sweep_region(&mut sweep, &mut adj, &|lw: &Self, r| {
            lw.is_straight(r, region)
        });
        self.operator = saved_operator;
        if let Err(msg) = result {
            self.diag.error(span, msg);
            return poisoned_result(self);
        }
        // The backward nodes live in TF's name scope `gradients/`, so the graph's exports
        // (TensorBoard groups by scope) show forward and backward apart. A value of a forward
        // cond's arm exported for the backward (and the zeros of the other arm) is computed by
        // the forward cond: it stays forward.
        for i in sweep.forward_len..self.graph.nodes.len() {
            let n = &self.graph.nodes[i];
            let in_forward_cond = match (&n.op, n.region) {
                (Op::CondOut { cond, .. }, _) => cond.0 < sweep.forward_conds,
                (_, Region::Arm { cond, .. }) => n.region != region && cond.0 < sweep.forward_conds,
                _ => false,
            };
            let n = &mut self.graph.nodes[i];
            if !in_forward_cond {
                n.role = Role::Backward;
            }
            if n.name.is_none() {
                n.name = Some(format!("gradients/{}_{i}", n.op.name()));
            }
        }
        let mut grads = Vec::new();
        for &x in &x_ids {
            let g = match adj.get(&x) {
                Some(&g) => g,
                None => {
                    let n = self.graph.node(x).clone();
                    self.zeros(n.dtype, n.shape, span)
                }
            };
            if g.0 >= sweep.forward_len {
                let x_name = self
                    .graph
                    .node(x)
                    .name
                    .clone()
                    .unwrap_or_else(|| format!("n{}", x.0));
                self.graph.node_mut(g).name = Some(format!("gradients/d_{x_name}"));
            }
            grads.push(Value::Tensor(g));
        }
        nest(grads)
    }

    /// One `x` of `gradients`: its tensors (one, or a struct's leaves) pushed to `xs`, and
    /// the value whose leaves the gradients replace.
    fn gradient_target(&mut self, e: &Expr, xs: &mut Vec<(NodeId, Span)>) -> Value {
        let espan = crate::ir::Spanned::span(e);
        let v = self.lower_expr(e);
        if !matches!(v, Value::Struct { .. } | Value::Array(_)) {
            let id = match self.tensor_of(&v, espan, "an operand") {
                Some(id) => id,
                None => self.poisoned(espan),
            };
            xs.push((id, espan));
            return Value::Tensor(id);
        }
        let mut leaves = Vec::new();
        super::structs::leaves_of(&v, "", &mut leaves);
        for (_, leaf) in &leaves {
            let id = match self.tensor_of(leaf, espan, "a field") {
                Some(id) => id,
                None => self.poisoned(espan),
            };
            xs.push((id, espan));
        }
        v
    }

    /// Marks the forward nodes between the `xs` and `y`.
    fn plan_sweep(&self, y: NodeId, xs: &[NodeId], span: Span) -> Sweep {
        let len = self.graph.nodes.len();
        let mut depends = vec![false; len];
        for (i, n) in self.graph.nodes.iter().enumerate() {
            let id = NodeId(i);
            let carries = n.dtype.is_float() && !self.stopped.contains(&id) && !n.poisoned;
            depends[i] = carries && (xs.contains(&id) || n.inputs.iter().any(|inp| depends[inp.0]));
        }
        let mut needed = vec![false; len];
        needed[y.0] = true;
        for i in (0..len).rev() {
            if needed[i] && depends[i] {
                for inp in &self.graph.nodes[i].inputs {
                    needed[inp.0] = true;
                }
            }
        }
        Sweep {
            forward_len: len,
            forward_conds: self.graph.conds.len(),
            depends,
            needed,
            span,
            exported: HashMap::new(),
        }
    }

    /// Whether nodes of region `r` are computed before any code of region `at` runs: `r` is
    /// `at` or one of the regions enclosing it.
    fn is_straight(&self, r: Region, mut at: Region) -> bool {
        loop {
            if r == at {
                return true;
            }
            match at {
                Region::Main => return false,
                Region::Arm { cond, .. } => at = self.graph.conds[cond.0].region,
            }
        }
    }

    /// Propagates the adjoints in `adj` backwards over the forward nodes whose region
    /// satisfies `straight`; conds met on the way are differentiated as a unit.
    fn sweep_region(
        &mut self,
        sweep: &mut Sweep,
        adj: &mut Adjoints,
        straight: &dyn Fn(&Self, Region) -> bool,
    ) -> Result<(), String> {
        let mut done_conds: Vec<CondId> = Vec::new();
        for i in (0..sweep.forward_len).rev() {
            let id = NodeId(i);
            if !sweep.active(id) || !straight(self, self.graph.node(id).region) {
                continue;
            }
            if let Op::CondOut { cond, .. } = self.graph.node(id).op {
                if !done_conds.contains(&cond) {
                    done_conds.push(cond);
                    self.differentiate_cond(sweep, adj, cond)?;
                }
                continue;
            }
            let Some(&g) = adj.get(&id) else { continue };
            let contributions = self.vjp(sweep, id, g)?;
            for (input, c) in contributions {
                self.accumulate(adj, input, c, sweep.span);
            }
        }
        Ok(())
    }

    /// Adds `c` to the adjoint of `node`.
    fn accumulate(&mut self, adj: &mut Adjoints, node: NodeId, c: NodeId, span: Span) {
        let sum = match adj.get(&node) {
            Some(&prev) => self.binary(BinaryOp::Add, prev, c, span),
            None => c,
        };
        adj.insert(node, sum);
    }

    /// The backward of a cond: a cond on the same predicate whose arms run the backward of
    /// the forward arms and output the adjoints of the outer values they read.
    fn differentiate_cond(
        &mut self,
        sweep: &mut Sweep,
        adj: &mut Adjoints,
        cond: CondId,
    ) -> Result<(), String> {
        let c = self.graph.conds[cond.0].clone();
        let seeds: Vec<(usize, NodeId)> = c
            .results
            .iter()
            .enumerate()
            .filter_map(|(k, r)| adj.get(r).map(|&g| (k, g)))
            .collect();
        if seeds.is_empty() {
            return Ok(());
        }
        let span = sweep.span;
        let outer_region = self.region;
        let bwd = CondId(self.graph.conds.len());
        self.graph.conds.push(Cond {
            predicate: c.predicate.clone(),
            region: outer_region,
            names: vec![],
            then_outputs: vec![],
            else_outputs: vec![],
            results: vec![],
            then_effects: vec![],
            else_effects: vec![],
            removed: false,
        });
        let mut arm_adjoints = Vec::new();
        for then_arm in [true, false] {
            self.region = Region::Arm {
                cond: bwd,
                then_arm,
            };
            let outputs = if then_arm {
                &c.then_outputs
            } else {
                &c.else_outputs
            };
            let mut local = Adjoints::new();
            for &(k, g) in &seeds {
                self.accumulate(&mut local, outputs[k], g, span);
            }
            let fwd_arm = Region::Arm { cond, then_arm };
            let result = self.sweep_region(sweep, &mut local, &|_, r| r == fwd_arm);
            if let Err(e) = result {
                self.region = outer_region;
                return Err(e);
            }
            // What flows out of the arm: adjoints of values computed outside the forward cond.
            let outer: Adjoints = local
                .into_iter()
                .filter(|(n, _)| !self.graph.within_cond(self.graph.node(*n).region, cond))
                .collect();
            arm_adjoints.push(outer);
        }
        let mut keys: Vec<NodeId> = arm_adjoints
            .iter()
            .flat_map(|a| a.keys().copied())
            .collect();
        keys.sort();
        keys.dedup();
        let mut then_outs = Vec::new();
        let mut else_outs = Vec::new();
        for (arm, then_arm) in [(0, true), (1, false)] {
            self.region = Region::Arm {
                cond: bwd,
                then_arm,
            };
            for &k in &keys {
                let g = match arm_adjoints[arm].get(&k) {
                    Some(&g) => g,
                    None => {
                        let n = self.graph.node(k).clone();
                        self.zeros(n.dtype, n.shape, span)
                    }
                };
                if then_arm {
                    then_outs.push(g);
                } else {
                    else_outs.push(g);
                }
            }
        }
        self.region = outer_region;
        let mut results = Vec::new();
        for (i, &k) in keys.iter().enumerate() {
            let n = self.graph.node(k).clone();
            let mut inputs = vec![then_outs[i], else_outs[i]];
            if let Predicate::Tensor(p) = c.predicate {
                inputs.push(p);
            }
            let r = self.push(
                Op::CondOut {
                    cond: bwd,
                    index: i,
                },
                inputs,
                n.dtype,
                n.shape,
                span,
            );
            results.push(r);
        }
        {
            let b = &mut self.graph.conds[bwd.0];
            b.names = vec![String::new(); keys.len()];
            b.then_outputs = then_outs;
            b.else_outputs = else_outs;
            b.results = results.clone();
            if results.is_empty() {
                b.removed = true;
            }
        }
        for (&k, &r) in keys.iter().zip(&results) {
            self.accumulate(adj, k, r, span);
        }
        Ok(())
    }

    /// Forward node `id` as a value readable from the region being built: itself, or (for a
    /// value computed inside a cond arm that does not enclose that region) an extra output of
    /// its cond, with zeros from the other arm.
    pub(super) fn forward_value(&mut self, sweep: &mut Sweep, id: NodeId) -> NodeId {
        let at = self.region;
        let r = self.graph.node(id).region;
        if self.is_straight(r, at) {
            return id;
        }
        if let Some(&e) = sweep.exported.get(&(id, at)) {
            return e;
        }
        let Region::Arm { cond, then_arm } = r else {
            return id;
        };
        let cond_region = self.graph.conds[cond.0].region;
        let n = self.graph.node(id).clone();
        let saved = self.region;
        self.region = Region::Arm {
            cond,
            then_arm: !then_arm,
        };
        let zeros = self.zeros(n.dtype, n.shape.clone(), sweep.span);
        self.region = cond_region;
        let index = self.graph.conds[cond.0].results.len();
        let (t, e) = if then_arm { (id, zeros) } else { (zeros, id) };
        let mut inputs = vec![t, e];
        if let Predicate::Tensor(p) = self.graph.conds[cond.0].predicate {
            inputs.push(p);
        }
        let out = self.push(
            Op::CondOut { cond, index },
            inputs,
            n.dtype,
            n.shape,
            sweep.span,
        );
        {
            let c = &mut self.graph.conds[cond.0];
            c.names.push(String::new());
            c.then_outputs.push(t);
            c.else_outputs.push(e);
            c.results.push(out);
        }
        self.region = saved;
        let value = self.forward_value(sweep, out);
        sweep.exported.insert((id, at), value);
        value
    }
}
