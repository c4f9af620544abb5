//! Composition: a call of another graph function of the same `#[graph] mod` is inlined at the call, its symbols bound from the arguments.
//!
//! The callee's body is lowered in a fresh scope whose parameters are the call's argument
//! values; each symbolic dim of the callee's signature stands for the dim the argument has
//! at that axis, so `layer_norm(x)` with `x: f32[B, 1024]` runs the callee's body over
//! `[B, 1024]`. A mismatch between an argument and the callee's parameter is reported at
//! the argument, naming the callee's parameter. A callee with errors of its own makes the
//! call fail quietly: the callee's own expansion reports them.

use super::{Binding, Lowerer, Span, Value};
use crate::diag::Diagnostics;
use crate::ir::*;
use crate::signature::{ResultTree, Signature};
use std::cell::Cell;
use std::collections::{HashMap, HashSet};
use syn::visit::Visit;
use syn::Expr;

/// A graph function of the module being expanded.
pub struct Callee {
    pub sig: Signature,
    /// Whether the signature parsed without errors.
    pub sig_ok: bool,
    pub block: syn::Block,
    pub name_span: proc_macro2::Span,
    /// Whether the function lowers without errors on its own (computed on first use).
    valid: Cell<Option<bool>>,
}

/// The graph functions of one `#[graph] mod`, by name.
#[derive(Default)]
pub struct Callees {
    fns: HashMap<String, Callee>,
    /// The functions that reach themselves through calls, with the cycle for the message.
    recursive: HashMap<String, Vec<String>>,
    /// The module's `const NAME: T = literal;` items, seen by every function's body as if
    /// declared in it (`for` bounds, axes, operands).
    consts: HashMap<String, Scalar>,
    /// The module's parameter structs (struct literals in a body build them).
    structs: crate::structs::StructDefs,
}

impl Callees {
    /// The table of a module's functions; call cycles are found here, once.
    pub fn new(fns: Vec<(String, Callee)>) -> Callees {
        let fns: HashMap<String, Callee> = fns.into_iter().collect();
        let calls: HashMap<String, Vec<String>> = fns
            .iter()
            .map(|(name, c)| {
                let mut finder = CallFinder {
                    names: &fns,
                    found: Vec::new(),
                };
                finder.visit_block(&c.block);
                (name.clone(), finder.found)
            })
            .collect();
        let mut recursive = HashMap::new();
        for name in fns.keys() {
            if let Some(cycle) = find_cycle(name, &calls) {
                recursive.insert(name.clone(), cycle);
            }
        }
        Callees {
            fns,
            recursive,
            consts: HashMap::new(),
            structs: Default::default(),
        }
    }

    /// The same table, with the module's literal `const` items.
    pub fn with_consts(self, consts: HashMap<String, Scalar>) -> Callees {
        Callees { consts, ..self }
    }

    /// The same table, with the module's parameter structs.
    pub fn with_structs(self, structs: crate::structs::StructDefs) -> Callees {
        Callees { structs, ..self }
    }

    /// The module's parameter structs.
    pub fn structs(&self) -> &crate::structs::StructDefs {
        &self.structs
    }

    /// The module's literal `const` items.
    pub fn consts(&self) -> &HashMap<String, Scalar> {
        &self.consts
    }

    pub fn callee(&self, name: &str) -> Option<&Callee> {
        self.fns.get(name)
    }

    /// The call cycle through `name`, if it is recursive (`["f", "g", "f"]`).
    pub fn cycle(&self, name: &str) -> Option<&[String]> {
        self.recursive.get(name).map(Vec::as_slice)
    }

    /// Whether `name` lowers on its own without errors (it is then safe to inline).
    fn is_valid(&self, name: &str) -> bool {
        let Some(c) = self.fns.get(name) else {
            return false;
        };
        if let Some(v) = c.valid.get() {
            return v;
        }
        let valid = c.sig_ok && self.cycle(name).is_none() && {
            let mut scratch = Diagnostics::default();
            super::lower(&c.sig, &c.block, c.name_span.into(), &mut scratch, self);
            !scratch.has_errors()
        };
        c.valid.set(Some(valid));
        valid
    }
}

impl Callee {
    pub fn new(
        sig: Signature,
        sig_ok: bool,
        block: syn::Block,
        name_span: proc_macro2::Span,
    ) -> Callee {
        Callee {
            sig,
            sig_ok,
            block,
            name_span,
            valid: Cell::new(None),
        }
    }
}

/// Collects the names of the module's functions called in a body.
struct CallFinder<'n> {
    names: &'n HashMap<String, Callee>,
    found: Vec<String>,
}

impl<'ast> Visit<'ast> for CallFinder<'_> {
    fn visit_expr_call(&mut self, c: &'ast syn::ExprCall) {
        if let Expr::Path(p) = &*c.func {
            if let Some(id) = p.path.get_ident() {
                let name = id.to_string();
                if self.names.contains_key(&name) && !self.found.contains(&name) {
                    self.found.push(name);
                }
            }
        }
        syn::visit::visit_expr_call(self, c);
    }
}

/// A path of calls from `start` back to itself, if there is one.
fn find_cycle(start: &str, calls: &HashMap<String, Vec<String>>) -> Option<Vec<String>> {
    let mut path = vec![start.to_string()];
    let mut seen = HashSet::new();
    fn walk(
        start: &str,
        path: &mut Vec<String>,
        seen: &mut HashSet<String>,
        calls: &HashMap<String, Vec<String>>,
    ) -> bool {
        let last = path.last().expect("a path").clone();
        for next in calls.get(&last).into_iter().flatten() {
            if next == start {
                path.push(next.clone());
                return true;
            }
            if seen.insert(next.clone()) {
                path.push(next.clone());
                if walk(start, path, seen, calls) {
                    return true;
                }
                path.pop();
            }
        }
        false
    }
    walk(start, &mut path, &mut seen, calls).then_some(path)
}

/// The value of a call: the result tensors nested as the callee declares them (tuples,
/// structs and arrays).
fn nest(tree: &ResultTree, leaves: &[NodeId]) -> Value {
    super::structs::tree_value(tree, &mut |i| Value::Tensor(leaves[i]))
}

/// A parameter of a callee as its callers see it: one parameter, or a struct parameter
/// (passed as one argument, flattened into its leaves in the callee's signature).
enum Public<'p> {
    Param(&'p Param),
    Struct(&'p crate::signature::StructParam),
}

impl Public<'_> {
    fn name(&self) -> String {
        match self {
            Public::Param(p) => p.name().to_string(),
            Public::Struct(sp) => sp.name.to_string(),
        }
    }
}

/// Binds the callee's symbols from one argument's shape, or says why the shapes differ.
fn bind_shape(
    declared: &[Dim],
    found: &[Dim],
    subst: &mut HashMap<String, Dim>,
) -> Result<(), String> {
    if declared.len() != found.len() {
        return Err(format!(
            "rank {} declared, rank {} found",
            declared.len(),
            found.len()
        ));
    }
    for (axis, (d, f)) in declared.iter().zip(found).enumerate() {
        match d {
            Dim::Sym(s) => match subst.get(s) {
                Some(bound) if bound != f => {
                    return Err(format!(
                        "axis {axis} is `{s}`, which an earlier argument bound to {bound}, but here it is {f}"
                    ))
                }
                Some(_) => {}
                None => {
                    subst.insert(s.clone(), f.clone());
                }
            },
            // Product dims (`{R * 4}`) are matched once the plain symbols are bound.
            Dim::Prod(_) => {}
            _ if d == f => {}
            _ => return Err(format!("axis {axis}: {d} != {f}")),
        }
    }
    Ok(())
}

/// Matches one argument's product dims (`{R * 4}`) once every argument's plain dims are bound:
/// checks a product whose symbols are all bound, or binds its one free symbol (the argument's
/// dim divided by the rest, as `B*4` divided by 4 is `B`).
fn bind_products(
    declared: &[Dim],
    found: &[Dim],
    subst: &mut HashMap<String, Dim>,
) -> Result<(), String> {
    for (axis, (d, f)) in declared.iter().zip(found).enumerate() {
        let Dim::Prod(m) = d else { continue };
        // The bound part of the product in the caller's terms, and its one free symbol.
        let mut known = Dim::Const(m.coef);
        let mut free = None;
        for s in &m.syms {
            match subst.get(s) {
                Some(b) => known = known.times(b).unwrap_or(Dim::Const(u64::MAX)),
                None if free.is_none() => free = Some(s.clone()),
                None => {
                    return Err(format!(
                        "axis {axis} is `{d}`, whose symbols are not bound by a plain dim of any argument"
                    ))
                }
            }
        }
        match free {
            None if &known == f => {}
            None => {
                return Err(format!(
                    "axis {axis} is `{d}` = {known}, but here it is {f}"
                ))
            }
            Some(s) => match f.monomial().divide(&known.monomial()) {
                Some(q) => {
                    subst.insert(s, Dim::from_monomial(q));
                }
                None => {
                    return Err(format!(
                        "axis {axis} is `{d}`, but {f} is not {known} times a dim"
                    ))
                }
            },
        }
    }
    Ok(())
}

impl<'a> Lowerer<'a> {
    /// Inlines the call `c` of the module's function `name`.
    pub(super) fn lower_inline_call(&mut self, name: &str, c: &syn::ExprCall) -> Value {
        let span: Span = c.span();
        let callees = self.callees;
        let callee = callees.callee(name).expect("checked by the caller");
        if let Some(cycle) = callees.cycle(name) {
            self.diag.error(
                c.func.span(),
                format!(
                    "`{name}` is recursive ({}): graph functions are inlined at their calls, so recursion is not supported",
                    cycle.join(" -> ")
                ),
            );
            return Value::Tensor(self.poisoned(span));
        }
        let params = &callee.sig.params;
        // The parameters as the caller passes them: a struct parameter is one argument.
        let public: Vec<Public> = params
            .iter()
            .filter_map(|p| match p {
                Param::Tensor(t) => match &t.field {
                    Some(f) if f.first => callee
                        .sig
                        .struct_params
                        .iter()
                        .find(|sp| sp.name == f.root)
                        .map(Public::Struct),
                    Some(_) => None,
                    None => Some(Public::Param(p)),
                },
                Param::Host(_) => Some(Public::Param(p)),
            })
            .collect();
        if c.args.len() != public.len() {
            let names: Vec<String> = public.iter().map(|p| format!("`{}`", p.name())).collect();
            self.diag.error(
                span,
                format!(
                    "`{name}` takes {} argument(s) ({}); found {}",
                    public.len(),
                    names.join(", "),
                    c.args.len()
                ),
            );
            return Value::Tensor(self.poisoned(span));
        }
        let mut subst: HashMap<String, Dim> = HashMap::new();
        let mut bindings: Vec<(String, Value)> = Vec::new();
        // Each in-place parameter of the callee with the caller's variable it updates.
        let mut updates: Vec<(String, String)> = Vec::new();
        // The tensor arguments whose product dims are matched after the loop, once every
        // plain dim of every argument is bound.
        let mut deferred = Vec::new();
        let mut ok = true;
        for (pp, arg) in public.iter().zip(&c.args) {
            let arg_span = arg.span();
            let p = match pp {
                Public::Param(p) => *p,
                Public::Struct(sp) => {
                    match self.struct_argument(name, sp, params, arg, &mut subst) {
                        Some(v) => bindings.push((sp.name.to_string(), v)),
                        None => ok = false,
                    }
                    continue;
                }
            };
            match p {
                Param::Tensor(t) => {
                    let id = match self.in_place_argument(name, t, arg) {
                        Ok(Some(var)) => {
                            let value = self.lookup(&var).map(|(_, b)| b.value.clone());
                            let id =
                                value.and_then(|v| self.tensor_of(&v, arg_span, "an argument"));
                            let Some(id) = id else {
                                ok = false;
                                continue;
                            };
                            updates.push((t.name.to_string(), var));
                            id
                        }
                        Ok(None) => self.operand(arg),
                        Err(()) => {
                            ok = false;
                            continue;
                        }
                    };
                    let id = self.resolve_weak_to(id, t.dtype, arg_span);
                    let n = self.graph.node(id).clone();
                    if n.poisoned {
                        ok = false;
                        continue;
                    }
                    let declared = type_str(t.dtype, &t.shape);
                    let found = type_str(n.dtype, &n.shape);
                    let mismatch = if n.dtype != t.dtype {
                        Some(format!("dtype {} != {}", t.dtype, n.dtype))
                    } else {
                        bind_shape(&t.shape, &n.shape, &mut subst).err()
                    };
                    if let Some(why) = mismatch {
                        self.diag.error(
                            arg_span,
                            format!("parameter `{}` of `{name}` is declared {declared} but the argument is {found} ({why})", t.name),
                        );
                        ok = false;
                        continue;
                    }
                    deferred.push((t, n.shape.clone(), arg_span, declared, found));
                    bindings.push((t.name.to_string(), Value::Tensor(id)));
                }
                Param::Host(h) => match self.host_expr(arg) {
                    Some(tokens) => bindings.push((
                        h.name.to_string(),
                        Value::Host {
                            tokens,
                            dtype: h.dtype,
                            node: None,
                        },
                    )),
                    None => {
                        self.diag.error(
                            arg_span,
                            format!("host parameter `{}` of `{name}` takes a host value (a literal, a host parameter or a `const`), not a tensor", h.name),
                        );
                        ok = false;
                    }
                },
            }
        }
        for (t, shape, arg_span, declared, found) in deferred {
            if let Err(why) = bind_products(&t.shape, &shape, &mut subst) {
                self.diag.error(
                    arg_span,
                    format!("parameter `{}` of `{name}` is declared {declared} but the argument is {found} ({why})", t.name),
                );
                ok = false;
            }
        }
        if !ok {
            return Value::Tensor(self.poisoned(span));
        }
        if !callees.is_valid(name) {
            // The callee's own expansion reports its errors; this call only fails.
            self.diag.fail_quietly();
            return Value::Tensor(self.poisoned(span));
        }
        let symbols: Vec<String> = params
            .iter()
            .filter_map(|p| match p {
                Param::Tensor(t) => Some(t.shape.iter()),
                Param::Host(_) => None,
            })
            .flatten()
            .flat_map(|d| d.monomial().syms)
            .collect();

        // Lower the callee's body in its own environment: its parameters' scope, then the
        // body's (as for the root function, so `let w` in the body shadows parameter `w`).
        let saved_scopes = std::mem::replace(&mut self.scopes, vec![HashMap::new()]);
        let saved_arms = std::mem::take(&mut self.arms);
        let saved_consts = std::mem::replace(&mut self.consts, self.callees.consts().clone());
        let saved_symbols = std::mem::replace(&mut self.symbols, symbols);
        let saved_subst = std::mem::replace(&mut self.dim_subst, subst);
        for (n, v) in bindings {
            let (mutable, in_place) = match params.iter().find(|p| p.name() == n.as_str()) {
                Some(Param::Tensor(t)) => (t.mutable || t.in_place, t.in_place),
                Some(Param::Host(h)) => (h.mutable, false),
                None => (false, false),
            };
            self.scopes[0].insert(
                n,
                Binding {
                    value: v,
                    mutable,
                    in_place,
                },
            );
        }
        self.scopes.push(HashMap::new());
        let mark = self.diag.len();
        let result = self.lower_block_inner(&callee.block);
        // The callee's in-place parameters' final values, for the caller's variables.
        let updated: Vec<(String, Option<Value>)> = updates
            .iter()
            .map(|(param, var)| {
                (
                    var.clone(),
                    self.scopes[0].get(param).map(|b| b.value.clone()),
                )
            })
            .collect();
        let outputs: Vec<OutputDecl> = callee
            .sig
            .outputs
            .iter()
            .map(|o| OutputDecl {
                dtype: o.dtype,
                shape: o.shape.iter().map(|d| self.subst_dim(d)).collect(),
            })
            .collect();
        self.scopes = saved_scopes;
        self.arms = saved_arms;
        self.consts = saved_consts;
        self.symbols = saved_symbols;
        self.dim_subst = saved_subst;
        let inner = self.diag.split_off(mark);
        if !inner.is_empty() {
            for e in inner {
                self.diag
                    .error(span, format!("in the call of `{name}` inlined here: {e}"));
            }
            return Value::Tensor(self.poisoned(span));
        }

        // The caller's variables passed as `&mut` take the callee's parameters' new values.
        for ((var, value), (param, _)) in updated.into_iter().zip(&updates) {
            let Some(Value::Tensor(id)) = value else {
                continue;
            };
            let Some(Param::Tensor(t)) = params.iter().find(|p| p.name() == param.as_str()) else {
                continue;
            };
            let id = self.resolve_weak_to(id, t.dtype, span);
            let id = self.concrete(id);
            self.assign(&var, Value::Tensor(id), span);
        }

        // The result, typed as the callee declares it and nested as it declares.
        let mut values = Vec::new();
        if !super::flatten_results(&result, &callee.sig.results, &mut values) {
            // The callee's own expansion reports a body that does not match its results.
            self.diag.fail_quietly();
            return Value::Tensor(self.poisoned(span));
        }
        let mut leaves = Vec::new();
        for (v, decl) in values.iter().zip(&outputs) {
            let Some(id) = self.tensor_of(v, span, "a result") else {
                return Value::Tensor(self.poisoned(span));
            };
            let id = self.resolve_weak_to(id, decl.dtype, span);
            let n = self.graph.node(id);
            if !n.poisoned && (n.dtype != decl.dtype || n.shape != decl.shape) {
                let msg = format!(
                    "`{name}` declares its result {} but at this call its body returns {}",
                    type_str(decl.dtype, &decl.shape),
                    type_str(n.dtype, &n.shape)
                );
                self.diag.error(span, msg);
                return Value::Tensor(self.poisoned(span));
            }
            leaves.push(id);
        }
        nest(&callee.sig.results, &leaves)
    }

    /// The value of a struct argument, each leaf checked against the callee's field (its
    /// dtype and shape); `None` after reporting a mismatch at the argument.
    fn struct_argument(
        &mut self,
        name: &str,
        sp: &crate::signature::StructParam,
        params: &[Param],
        arg: &Expr,
        subst: &mut HashMap<String, Dim>,
    ) -> Option<Value> {
        let arg_span: Span = arg.span();
        let v = self.lower_expr(arg);
        if let Value::Tensor(id) = v {
            if self.graph.node(id).poisoned {
                return None;
            }
        }
        let mut values = Vec::new();
        let mut leaf_ids = Vec::new();
        super::structs::tree_value(&sp.tree, &mut |i| {
            leaf_ids.push(i);
            Value::Unit
        });
        let declared_ty = match &sp.tree {
            ResultTree::Struct { ty, .. } => super::structs::a_struct(ty),
            ResultTree::Array(items) => format!("an array of {}", items.len()),
            _ => "a struct".to_string(),
        };
        if !super::flatten_results(&v, &sp.tree, &mut values) || values.len() != leaf_ids.len() {
            let msg = format!(
                "parameter `{}` of `{name}` is {declared_ty}; the argument is {}",
                sp.name,
                super::value_str(&v, &self.graph)
            );
            self.diag.error(arg_span, msg);
            return None;
        }
        let mut ok = true;
        for (leaf, lv) in leaf_ids.iter().zip(&values) {
            let Param::Tensor(t) = &params[*leaf] else {
                continue;
            };
            let Some(id) = self.tensor_of(lv, arg_span, "a field") else {
                ok = false;
                continue;
            };
            let id = self.resolve_weak_to(id, t.dtype, arg_span);
            let n = self.graph.node(id).clone();
            if n.poisoned {
                ok = false;
                continue;
            }
            let mismatch = if n.dtype != t.dtype {
                Some(format!("dtype {} != {}", t.dtype, n.dtype))
            } else {
                bind_shape(&t.shape, &n.shape, subst).err()
            };
            if let Some(why) = mismatch {
                self.diag.error(
                    arg_span,
                    format!(
                        "field `{}` of `{name}`'s parameter is declared {} but the argument's is {} ({why})",
                        t.label(),
                        type_str(t.dtype, &t.shape),
                        type_str(n.dtype, &n.shape)
                    ),
                );
                ok = false;
            }
        }
        ok.then_some(v)
    }

    /// Checks how `arg` is passed to parameter `t` of callee `name`: an in-place parameter
    /// takes `&mut var` of a mutable variable of the caller (its name is returned), any other
    /// parameter a value. A mismatch is reported at the argument (`Err`).
    fn in_place_argument(
        &mut self,
        name: &str,
        t: &TensorParam,
        arg: &Expr,
    ) -> Result<Option<String>, ()> {
        let param = &t.name;
        let reference = match super::expr::unwrapped(arg) {
            Expr::Reference(r) if r.mutability.is_some() => Some(r),
            _ => None,
        };
        match (t.in_place, reference) {
            (false, None) => Ok(None),
            (false, Some(r)) => {
                self.diag.error(
                    r.span(),
                    format!("parameter `{param}` of `{name}` takes a value, not `&mut`: pass it without `&mut` (only a `{param}: &mut Tensor<..>` parameter is updated in place)"),
                );
                Err(())
            }
            (true, None) => {
                self.diag.error(
                    arg.span(),
                    format!("parameter `{param}` of `{name}` is updated in place (`{param}: &mut Tensor<..>`): pass a variable of the caller as `&mut var`, which then holds the new value"),
                );
                Err(())
            }
            (true, Some(r)) => {
                let var = match super::expr::unwrapped(&r.expr) {
                    Expr::Path(p) => p.path.get_ident().map(|i| i.to_string()),
                    _ => None,
                };
                let Some(var) = var else {
                    self.diag.error(
                        r.expr.span(),
                        format!("parameter `{param}` of `{name}` is updated in place: pass a variable (`&mut w`), not an expression"),
                    );
                    return Err(());
                };
                match self.lookup(&var) {
                    Some((_, b)) if b.mutable => Ok(Some(var)),
                    Some(_) => {
                        self.diag.error(
                            r.expr.span(),
                            format!("cannot pass `&mut {var}` to `{name}`: `{var}` is not mutable; declare it `let mut {var}` (or, for a parameter, `{var}: &mut Tensor<..>` or `mut {var}: Tensor<..>`)"),
                        );
                        Err(())
                    }
                    None => {
                        self.diag.error(
                            r.expr.span(),
                            format!("cannot find `{var}` in this `#[graph]` body"),
                        );
                        Err(())
                    }
                }
            }
        }
    }

    /// A dim of the function being lowered in the terms of the root function (the
    /// arguments' dims stand for an inlined callee's symbols).
    pub(super) fn subst_dim(&self, d: &Dim) -> Dim {
        let subst = |s: &String| {
            self.dim_subst
                .get(s)
                .cloned()
                .unwrap_or_else(|| Dim::Sym(s.clone()))
        };
        match d {
            Dim::Const(_) => d.clone(),
            Dim::Sym(s) => subst(s),
            // A product that would overflow 64 bits keeps the callee's symbols, so the
            // shape checks after it report a mismatch instead of a wrong size.
            Dim::Prod(m) => m
                .syms
                .iter()
                .try_fold(Dim::Const(m.coef), |acc, s| acc.times(&subst(s)))
                .unwrap_or_else(|| d.clone()),
        }
    }
}
