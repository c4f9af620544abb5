//! Emits the compiled body: straight-line Rust, one kernel call per fused group in the fixed schedule, buffers from the static plan.
//!
//! A fused loop is rendered from fusion's [`LoopPlan`] for its group (iteration shape, row
//! split, flatness, each leaf's [`LeafClass`], the per-element ops in order): this module
//! decides how the code looks (kernels, parallel drivers, buffers, in-place writes, row
//! fusion of consecutive loops over the same rows), never which values a loop reads or how.

use super::{dim_value, elem_ty, len_expr, shape_expr};
use crate::emit::{format_ident, quote};
use crate::fuse::{Group, GroupKind, LeafClass, LoopKind, LoopPlan, Plan};
use crate::ir::*;
use crate::schedule::{Fork, Schedule};
use proc_macro2::{Ident, TokenStream};
use std::collections::{HashMap, HashSet};

pub mod selection;

/// A fused element tree split for division by row-invariant divisors
/// ([`Emitter::shared_division_tree`]).
struct SharedDivisionTree {
    /// `let`s computed once a row, the `SharedDivisor`s among them.
    hoisted: TokenStream,
    /// The element's `let`s with every division by `/`.
    exact: TokenStream,
    /// The element's `let`s dividing through the `SharedDivisor`s, each with a range check.
    fast: TokenStream,
    /// Whether every divisor admits the fast path.
    fast_cond: TokenStream,
    /// The element's range checks folded by `max`.
    check: TokenStream,
    /// The element type of the shared divisions.
    div_ty: TokenStream,
    /// The root's expression (the same name in both variants).
    root: TokenStream,
}

/// One op of a fused tree as [`Emitter::visit_fused_ops`] renders it.
struct FusedOp<'g> {
    id: NodeId,
    node: &'g Node,
    /// The name it is bound to (`__t<id>`).
    t: Ident,
    /// Its element type.
    et: TokenStream,
    /// Its scalar expression over `args`.
    expr: TokenStream,
    /// Its operands' expressions.
    args: Vec<TokenStream>,
    /// The expressions of the values computed before it.
    computed: &'g HashMap<NodeId, TokenStream>,
}

impl FusedOp<'_> {
    /// `let __t<id>: T = expr;`
    fn let_t(&self) -> TokenStream {
        let (t, et, e) = (&self.t, &self.et, &self.expr);
        quote!(let #t: #et = #e;)
    }
}

/// How a materialised value is held in the emitted code.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Store {
    /// A local of the element type: exactly the rank-0 values (fusion's plan reads a rank-0
    /// leaf as [`LeafClass::Scalar`] on that basis).
    Scalar,
    /// A borrowed `&[T]` (parameters).
    Slice,
    /// An owned `Vec<T>`.
    Owned,
    /// A view of another value's storage (`reshape`).
    Alias(NodeId),
}

pub struct Emitter<'a> {
    graph: &'a Graph,
    plan: &'a Plan,
    sched: &'a Schedule,
    store: HashMap<NodeId, Store>,
    moved: Vec<NodeId>,
    profile_labels: Vec<String>,
    /// Emitting a forked branch: values in `outside` are shared and must not be moved.
    in_branch: bool,
    outside: Vec<NodeId>,
    /// Frees postponed until both branches of a fork are done.
    deferred: Vec<NodeId>,
}

fn v(id: NodeId) -> Ident {
    format_ident!("v{}", id.0)
}

/// Binds every result expression that is not a plain local (a copy, a `vec![..]`) to a local
/// `{prefix}_{k}` first, so that all copies read their buffers before any buffer is moved
/// into the results; returns those bindings and the results with the copies replaced.
fn copies_first<T>(
    results: Vec<(T, TokenStream)>,
    prefix: &str,
) -> (TokenStream, Vec<(T, TokenStream)>) {
    let mut hoisted = TokenStream::new();
    let mut out = Vec::new();
    for (k, (extra, data)) in results.into_iter().enumerate() {
        if syn::parse2::<Ident>(data.clone()).is_ok() {
            out.push((extra, data));
        } else {
            let local = format_ident!("{}_{}", prefix, k);
            hoisted.extend(quote!(let #local = #data;));
            out.push((extra, quote!(#local)));
        }
    }
    (hoisted, out)
}

/// The `Numeric` trait path, for integer arithmetic with the runtime's semantics.
fn numeric() -> TokenStream {
    quote!(::grafo::__private::Numeric)
}

/// A literal of `dtype` with value `s`.
pub fn literal(s: Scalar, dtype: DType) -> TokenStream {
    match (s.convert(dtype), dtype) {
        // A negative value is spelled `(-m)`: a literal token cannot carry the sign of -0.0.
        // Only a finite value becomes a literal token (`quote` panics on others).
        (Scalar::Float(x), DType::F32) => float_literal(x, quote!(f32), || {
            let m = (x as f32).abs();
            if x.is_sign_negative() {
                quote!((-#m))
            } else {
                quote!(#m)
            }
        }),
        (Scalar::Float(x), _) => float_literal(x, quote!(f64), || {
            let m = x.abs();
            if x.is_sign_negative() {
                quote!((-#m))
            } else {
                quote!(#m)
            }
        }),
        (Scalar::Int(x), DType::I32) => {
            let x = x as i32;
            quote!(#x)
        }
        (Scalar::Int(x), _) => quote!(#x),
        (Scalar::Bool(b), _) => quote!(#b),
    }
}

/// A float literal, spelling NaN and the infinities as the type's constants.
fn float_literal(x: f64, ty: TokenStream, finite: impl FnOnce() -> TokenStream) -> TokenStream {
    if x.is_nan() {
        quote!(#ty::NAN)
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

impl<'a> Emitter<'a> {
    pub fn new(graph: &'a Graph, plan: &'a Plan, sched: &'a Schedule) -> Emitter<'a> {
        Emitter {
            graph,
            plan,
            sched,
            store: HashMap::new(),
            moved: Vec::new(),
            profile_labels: Vec::new(),
            in_branch: false,
            outside: Vec::new(),
            deferred: Vec::new(),
        }
    }

    fn node(&self, id: NodeId) -> &Node {
        self.graph.node(id)
    }

    /// The body of `__compiled`: parameters to slices, the schedule, the results.
    pub fn body(&mut self, params: &[Param]) -> TokenStream {
        let mut out = TokenStream::new();
        for (i, p) in params.iter().enumerate() {
            let Param::Tensor(t) = p else { continue };
            let Some(id) = self
                .graph
                .nodes
                .iter()
                .position(|n| n.op == Op::Input { param: i })
                .map(NodeId)
            else {
                continue;
            };
            if !self.plan.live[id.0] {
                continue;
            }
            let name = &t.name;
            let pname = name.to_string();
            let vid = v(id);
            let et = elem_ty(t.dtype);
            if t.shape.is_empty() {
                out.extend(
                    quote!(let #vid: #et = ::grafo::__private::compiled::scalar_of(&#name);),
                );
                self.store.insert(id, Store::Scalar);
            } else {
                let cow = format_ident!("__cow_{}", id.0);
                out.extend(quote! {
                    let #cow = ::grafo::__private::compiled::standard(#pname, #name.view())?;
                    let #vid: &[#et] = ::grafo::__private::compiled::contiguous(&#cow);
                });
                self.store.insert(id, Store::Slice);
            }
        }
        self.profile_labels = self.plan.groups.iter().map(|g| self.label(g)).collect();
        out.extend(self.size_checks(Region::Main));
        match self.sched.fork.clone() {
            Some(fork) => out.extend(self.forked(&fork)),
            None => out.extend(self.region(Region::Main)),
        }
        // Results.
        let mut results = Vec::new();
        let outputs = self.graph.outputs.clone();
        for (k, &o) in outputs.iter().enumerate() {
            let shape = self.node(o).shape.clone();
            let dv = dim_value(&shape);
            // A value fetched twice is copied for all but its last fetch, which may move it.
            let data = if outputs[k + 1..].contains(&o)
                && self.store.contains_key(&o)
                && self.store.get(&o) != Some(&Store::Scalar)
            {
                let s = self.slice(o);
                quote!(::grafo::__private::buffer::copied("result", #s)?)
            } else {
                self.owned_copy(o)
            };
            results.push((dv, data));
        }
        // Copies are taken before any buffer moves into the results (a returned view copies
        // from the buffer another result takes).
        let (hoisted, results) = copies_first(results, "__result");
        let results = results
            .iter()
            .map(|(dv, data)| quote!(::grafo::__private::compiled::into_array(#dv, #data)?));
        out.extend(quote!(#hoisted let __results = (#(#results,)*);));
        out
    }

    fn label(&self, g: &Group) -> String {
        let ops: Vec<String> = g.nodes.iter().map(|&n| self.node(n).op.name()).collect();
        let n = self.node(g.root);
        format!(
            "{} {} -> {}",
            g.kind.name(),
            ops.join("+"),
            type_str(n.dtype, &n.shape)
        )
    }

    /// The value `o` as an owned `Vec<T>` (moving it when it is an owned buffer not yet moved).
    fn owned_copy(&mut self, o: NodeId) -> TokenStream {
        let vid = v(o);
        match self.store.get(&o).copied() {
            Some(Store::Owned) if !self.moved.contains(&o) && self.may_move(o) => {
                self.moved.push(o);
                quote!(#vid)
            }
            Some(Store::Alias(root)) if self.alias_movable(o, root) => {
                // A returned view of a buffer nothing else reads takes the buffer itself.
                let mut r = root;
                while let Some(Store::Alias(next)) = self.store.get(&r).copied() {
                    r = next;
                }
                self.moved.push(r);
                let rid = v(r);
                quote!(#rid)
            }
            Some(Store::Owned) | Some(Store::Slice) | Some(Store::Alias(_)) => {
                let s = self.slice(o);
                quote!(::grafo::__private::buffer::copied("result", #s)?)
            }
            Some(Store::Scalar) => quote!(::std::vec![#vid]),
            None => {
                let e = self.scalar_value(o);
                quote!(::std::vec![#e])
            }
        }
    }

    /// Whether returned view `o` may take the buffer at the root of its alias chain.
    fn alias_movable(&self, o: NodeId, first: NodeId) -> bool {
        let mut r = first;
        while let Some(Store::Alias(next)) = self.store.get(&r).copied() {
            r = next;
        }
        let aliases_of_root = |x: NodeId| {
            let mut y = x;
            while let Some(Store::Alias(next)) = self.store.get(&y).copied() {
                y = next;
            }
            y == r
        };
        self.store.get(&r) == Some(&Store::Owned)
            && !self.moved.contains(&r)
            && self.may_move(r)
            && self
                .graph
                .outputs
                .iter()
                .filter(|&&x| aliases_of_root(x))
                .count()
                == 1
            && !self.graph.outputs.contains(&r)
            && o != r
    }

    /// A `&[T]` expression for a materialised tensor value.
    fn slice(&self, id: NodeId) -> TokenStream {
        let vid = v(id);
        match self.store.get(&id) {
            Some(Store::Slice) => quote!(#vid),
            Some(Store::Alias(r)) => self.slice(*r),
            _ => quote!(&#vid[..]),
        }
    }

    /// A scalar expression for a rank-0 value (a local, or an inlined constant).
    fn scalar_value(&self, id: NodeId) -> TokenStream {
        match self.store.get(&id) {
            Some(Store::Scalar) => {
                let vid = v(id);
                quote!(#vid)
            }
            Some(Store::Owned) | Some(Store::Slice) | Some(Store::Alias(_)) => {
                let s = self.slice(id);
                quote!((#s)[0])
            }
            None => {
                let n = self.node(id);
                if matches!(n.op, Op::Const { .. } | Op::Host { .. }) {
                    scalar_op(self.graph, id, &[])
                } else {
                    let args: Vec<TokenStream> =
                        n.inputs.iter().map(|&i| self.scalar_value(i)).collect();
                    scalar_op(self.graph, id, &args)
                }
            }
        }
    }

    /// Emits the groups of one region in schedule order (a cond arm's after its size checks).
    fn region(&mut self, r: Region) -> TokenStream {
        let ids = self
            .sched
            .region_groups
            .get(&r)
            .cloned()
            .unwrap_or_default();
        let mut out = match r {
            Region::Main => TokenStream::new(),
            Region::Arm { .. } => self.size_checks(r),
        };
        out.extend(self.run_groups(&ids));
        out
    }

    /// Checks, before region `r` runs, that the element count of every value it computes
    /// fits (`check_size`): the sizes the code derives from a shape with symbols, or from a
    /// static shape too large to address, then cannot overflow, and an `Err` names the op.
    /// A cond arm skips the shapes the main region checked at entry.
    fn size_checks(&self, r: Region) -> TokenStream {
        let checked = |n: &Node, i: usize, region: Region| {
            n.region == region
                && self.plan.live[i]
                && !n.poisoned
                && !n.shape.is_empty()
                && !matches!(n.op, Op::Input { .. } | Op::CondOut { .. })
        };
        let mut seen: Vec<(&Shape, DType)> = Vec::new();
        if r != Region::Main {
            for (i, n) in self.graph.nodes.iter().enumerate() {
                if checked(n, i, Region::Main) {
                    seen.push((&n.shape, n.dtype));
                }
            }
        }
        let mut out = TokenStream::new();
        for (i, n) in self.graph.nodes.iter().enumerate() {
            if !checked(n, i, r) || seen.contains(&(&n.shape, n.dtype)) {
                continue;
            }
            seen.push((&n.shape, n.dtype));
            // `None` when a dim is not a constant (a symbol or a product of symbols).
            let static_bytes =
                n.shape
                    .iter()
                    .try_fold(Some(elem_bytes(n.dtype)), |acc, d| match d {
                        Dim::Const(k) => Some(acc.and_then(|b| b.checked_mul((*k).max(1)))),
                        _ => None,
                    });
            if static_bytes.is_some_and(|b| b.is_some_and(|b| b <= isize::MAX as u64)) {
                continue;
            }
            let op = n.op.name();
            let et = elem_ty(n.dtype);
            let shape = shape_expr(&n.shape);
            out.extend(quote!(::grafo::__private::compiled::check_size::<#et>(#op, &#shape)?;));
        }
        out
    }

    /// Whether the code being emitted may move `v` (inside a forked branch, the values
    /// computed before the fork are shared with the other branch, so they stay put).
    fn may_move(&self, v: NodeId) -> bool {
        !self.in_branch || !self.outside.contains(&v)
    }

    /// `prefix; (branch 0 || branch 1)`: the two branches as closures over their own child
    /// contexts, joined with rayon when the session has inter-op threads, else one after the other.
    fn forked(&mut self, fork: &Fork) -> TokenStream {
        let mut out = self.run_groups(&fork.prefix);
        self.outside = self.store.keys().copied().collect();
        let mut closures = TokenStream::new();
        let mut binds = TokenStream::new();
        for k in 0..2 {
            self.in_branch = true;
            let code = self.run_groups(&fork.branches[k]);
            let outs = fork.outputs[k].clone();
            let vals: Vec<TokenStream> = outs
                .iter()
                .map(|&o| {
                    if self.node(o).shape.is_empty() {
                        self.scalar_value(o)
                    } else {
                        self.owned_copy(o)
                    }
                })
                .collect();
            let tys: Vec<TokenStream> = outs
                .iter()
                .map(|&o| {
                    let et = elem_ty(self.node(o).dtype);
                    if self.node(o).shape.is_empty() {
                        et
                    } else {
                        quote!(::std::vec::Vec<#et>)
                    }
                })
                .collect();
            self.in_branch = false;
            let name = format_ident!("__branch_{}", k);
            let result = format_ident!("__r{}", k);
            let (hoisted, vals) = copies_first(
                vals.into_iter().map(|v| ((), v)).collect(),
                "__branch_result",
            );
            let vals = vals.into_iter().map(|(_, v)| v);
            closures.extend(quote! {
                let #name = |__ctx: &mut ::grafo::__private::exec::ExecCtx<'_>| -> ::std::result::Result<(#(#tys,)*), ::grafo::Error> {
                    #code
                    #hoisted
                    ::std::result::Result::Ok((#(#vals,)*))
                };
            });
            let names: Vec<Ident> = outs.iter().map(|&o| v(o)).collect();
            binds.extend(quote!(let (#(mut #names,)*) = #result?;));
            for &o in &outs {
                let st = if self.node(o).shape.is_empty() {
                    Store::Scalar
                } else {
                    Store::Owned
                };
                self.store.insert(o, st);
                self.moved.retain(|&m| m != o);
            }
        }
        out.extend(quote! {
            #closures
            let (__r0, __r1) = if __ctx.run_branches_concurrently() {
                let (mut __c0, mut __c1) = __ctx.fork2();
                ::grafo::__private::rayon::join(|| __branch_0(&mut __c0), || __branch_1(&mut __c1))
            } else {
                let __r0 = __branch_0(__ctx);
                (__r0, __branch_1(__ctx))
            };
            #binds
        });
        // Values of the prefix last read inside a branch go back once both are done.
        for f in std::mem::take(&mut self.deferred) {
            if self.moved.contains(&f) || self.store.get(&f) != Some(&Store::Owned) {
                continue;
            }
            if let Some(s) = self.sched.slot[f.0] {
                let vid = v(f);
                let et = elem_ty(self.node(f).dtype);
                out.extend(quote!(__ctx.give::<#et>(#s, #vid);));
                self.moved.push(f);
            }
        }
        self.outside.clear();
        out
    }

    /// Emits groups in order, each followed by the frees the buffer plan puts after it.
    fn run_groups(&mut self, ids: &[usize]) -> TokenStream {
        let mut out = TokenStream::new();
        let mut pos = 0;
        while pos < ids.len() {
            let chain = self.row_chain(&ids[pos..]);
            if chain.len() >= 2 {
                out.extend(self.row_fused(&chain));
                for &gid in &chain {
                    out.extend(self.frees(gid));
                }
                pos += chain.len();
                continue;
            }
            let gid = ids[pos];
            pos += 1;
            let g = self.plan.groups[gid].clone();
            let code = self.group(&g);
            let timed = !matches!(
                g.kind,
                GroupKind::Scalar | GroupKind::View | GroupKind::Cond
            );
            if timed {
                let label = &self.profile_labels[gid];
                out.extend(quote! {
                    let __t = __ctx.start();
                    #code
                    __ctx.record(#gid, #label, __t);
                });
            } else {
                out.extend(code);
            }
            out.extend(self.frees(gid));
        }
        out
    }

    /// The row structure a group iterates over, if it can join a row-fused loop: the
    /// iteration shape and the axis where a row starts (a trailing reduction over its
    /// input's rows, or an elementwise loop over its last axis).
    fn row_structure(&self, gid: usize) -> Option<(Vec<Dim>, usize)> {
        let lp = self.plan.loops[gid].as_ref()?;
        let root = self.plan.groups[gid].root;
        match lp.kind {
            LoopKind::RowReduction => Some((lp.shape.clone(), lp.split)),
            // An elementwise loop written over a dead input keeps its own loop.
            LoopKind::Elementwise
                if !lp.shape.is_empty() && self.sched.in_place[root.0].is_none() =>
            {
                Some((lp.shape.clone(), lp.split))
            }
            _ => None,
        }
    }

    /// The values a group's loop reads, each with how it is read.
    fn loop_leaves(&self, gid: usize) -> &[(NodeId, LeafClass)] {
        self.plan.loops[gid]
            .as_ref()
            .map_or(&[][..], |lp| &lp.leaves[..])
    }

    /// The loop fusion planned for group `g` (elementwise, fusable reduction or epilogue groups).
    fn loop_plan(&self, g: &Group) -> LoopPlan {
        self.plan.loops[g.id].clone().expect(
            "fusion plans a loop for every elementwise, fusable reduction and epilogue group",
        )
    }

    /// The longest run of groups at the start of `ids` that can share one loop over rows:
    /// same rows, and every value one of them makes that a later one reads is read from the
    /// same row (a row statistic, or the row just written). W4's mean, variance and
    /// normalisation become one pass over memory; each row's data stays in L1 between them.
    fn row_chain(&self, ids: &[usize]) -> Vec<usize> {
        let Some((shape, split)) = ids.first().and_then(|&g| self.row_structure(g)) else {
            return Vec::new();
        };
        // Row fusion needs at least one reduction (otherwise one elementwise loop already is one pass).
        let mut chain = vec![ids[0]];
        for &gid in &ids[1..] {
            if self.row_structure(gid) != Some((shape.clone(), split)) {
                break;
            }
            let roots: Vec<NodeId> = chain.iter().map(|&c| self.plan.groups[c].root).collect();
            let row_local = self.loop_leaves(gid).iter().all(|(l, class)| {
                !roots.contains(l) || matches!(class, LeafClass::Full | LeafClass::RowScalar)
            });
            if !row_local {
                break;
            }
            chain.push(gid);
        }
        let has_reduce = chain
            .iter()
            .any(|&g| self.plan.groups[g].kind == GroupKind::Reduce);
        if has_reduce && chain.len() >= 2 {
            chain
        } else {
            Vec::new()
        }
    }

    /// One parallel loop over rows computing every group of `chain` row by row.
    fn row_fused(&mut self, chain: &[usize]) -> TokenStream {
        let groups: Vec<Group> = chain.iter().map(|&g| self.plan.groups[g].clone()).collect();
        let (shape, split) = self.row_structure(chain[0]).expect("checked by row_chain");
        let roots: Vec<NodeId> = groups.iter().map(|g| g.root).collect();
        // Values read from outside the chain.
        let mut external: Vec<(NodeId, LeafClass)> = Vec::new();
        for &gid in chain {
            for &(l, class) in self.loop_leaves(gid) {
                if !roots.contains(&l) && !external.iter().any(|&(e, _)| e == l) {
                    external.push((l, class));
                }
            }
        }
        external.sort_by_key(|&(l, _)| l);
        let ll = self.leaves_of(&external, &shape, split, false);
        // The results are `OutBuf`s initialised block by block as the kernel writes them,
        // unless one is written over a dead input (then they are plain buffers, as `alloc`
        // gives them).
        let by_blocks = roots.iter().all(|r| self.sched.in_place[r.0].is_none());
        let mut allocs = TokenStream::new();
        let mut finish_outs = TokenStream::new();
        for &r in &roots {
            if by_blocks {
                let n = self.node(r);
                let (et, len, op, vid) = (elem_ty(n.dtype), len_expr(&n.shape), n.op.name(), v(r));
                let make = match self.sched.slot[r.0] {
                    Some(s) => quote!(__ctx.take_out::<#et>(#s, #len, #op)?),
                    None => quote!(::grafo::__private::compiled::OutBuf::<#et>::fresh(#op, #len)?),
                };
                allocs.extend(quote!(let mut #vid = #make;));
                finish_outs.extend(quote!(let mut #vid: ::std::vec::Vec<#et> = #vid.into_vec();));
                self.store.insert(r, Store::Owned);
            } else {
                allocs.extend(self.alloc(r));
            }
        }
        let mut reads = ll.reads.clone();
        let mut slices = ll.slices.clone();
        // Values the same for a whole row: scalar and per-row leaves, and the row statistics
        // the chain computes.
        let mut row_invariant: HashSet<NodeId> = external
            .iter()
            .filter(|(_, class)| {
                matches!(
                    class,
                    LeafClass::Scalar | LeafClass::RowScalar | LeafClass::RowScalarAt
                )
            })
            .map(|&(l, _)| l)
            .collect();
        let mut body = TokenStream::new();
        let mut out_params = Vec::new();
        let mut out_args = Vec::new();
        // Row writers are rebound mutable inside the kernel (`multiversion!` takes plain names).
        let mut rebind = TokenStream::new();
        let mut per_row = Vec::new();
        for (k, g) in groups.iter().enumerate() {
            let o = format_ident!("__o{}", k);
            let et = elem_ty(self.node(g.root).dtype);
            // Fresh outputs arrive as write-only row writers: each element is stored once.
            if by_blocks {
                rebind.extend(quote!(let mut #o = #o;));
            }
            out_params.push(if by_blocks {
                quote!(#o: ::grafo::__private::compiled::OutRows<'_, #et>)
            } else {
                quote!(#o: &mut [#et])
            });
            let vid = v(g.root);
            out_args.push(quote!(#vid));
            if g.kind == GroupKind::Reduce {
                per_row.push(quote!(1usize));
                let rc = self.reduction_code(g, &reads, &slices);
                let accumulate = rc.accumulate;
                let fin = (rc.finish)(quote!(__total), quote!(__n));
                let s = format_ident!("__s{}", g.root.0);
                body.extend(if by_blocks {
                    quote! {
                        let #s: #et = { #accumulate #fin };
                        #o.write_row(1, |_| #s);
                    }
                } else {
                    quote! {
                        #o[__ri] = { #accumulate #fin };
                        let #s: #et = #o[__ri];
                    }
                });
                reads.insert(g.root, quote!(#s));
                row_invariant.insert(g.root);
            } else {
                per_row.push(quote!(__n));
                let lp = self.loop_plan(g);
                let y = format_ident!("__y{}", g.root.0);
                let shared = if by_blocks {
                    self.shared_division_tree(&lp.ops, lp.element, &reads, &row_invariant)
                } else {
                    None
                };
                if let Some(t) = shared {
                    let SharedDivisionTree {
                        hoisted,
                        exact,
                        fast,
                        fast_cond,
                        check,
                        div_ty,
                        root: root_expr,
                    } = t;
                    // Every element closure the emitter writes is `#[inline(always)]`: a
                    // closure LLVM leaves outlined is compiled without the kernel's target
                    // features (`multiversion!`), and W6's LayerNorm row then called libm's
                    // `fmaf` for each `mul_add` (5.5 ms instead of 4.7).
                    body.extend(quote! {
                        let #y: &[#et] = {
                            #hoisted
                            #o.write_row_with_fallback(
                                __n,
                                #fast_cond,
                                #[inline(always)] |__j: usize| -> (#et, _) {
                                    #fast
                                    (#root_expr, #check)
                                },
                                #[inline(always)] |__worst| ::grafo::__private::division::SharedDivisor::<#div_ty>::all_exact(__worst),
                                #[inline(always)] |__j: usize| -> #et {
                                    #exact
                                    #root_expr
                                },
                            )
                        };
                    });
                    reads.insert(g.root, quote!(#y[__j]));
                    slices.push(y);
                    continue;
                }
                let (lets, root_expr) = self.tree_lets(&lp.ops, lp.element, &reads);
                body.extend(if by_blocks {
                    quote! {
                        let #y: &[#et] = #o.write_row(__n, #[inline(always)] |__j: usize| -> #et {
                            #lets
                            #root_expr
                        });
                    }
                } else {
                    quote! {
                        {
                            let __orow = &mut #o[__ri * __n..__ri * __n + __n];
                            for __j in 0..__n {
                                #lets
                                __orow[__j] = #root_expr;
                            }
                        }
                        let #y: &[#et] = &#o[__ri * __n..__ri * __n + __n];
                    }
                });
                reads.insert(g.root, quote!(#y[__j]));
                slices.push(y);
            }
        }
        let kname = format_ident!("__grafo_kernel_rows_g{}", chain[0]);
        let LoopLeaves {
            params,
            args,
            row_bind,
            pre,
            ..
        } = ll;
        let cost: usize = chain
            .iter()
            .map(|&gid| self.cost(&self.plan.groups[gid]))
            .sum();
        let rows = len_expr(&shape[..split]);
        let row_len = len_expr(&shape[split..]);
        let chunk_names: Vec<Ident> = (0..groups.len())
            .map(|k| format_ident!("__c{}", k))
            .collect();
        let first_chunk = &chunk_names[0];
        let (whole, blocks, init_blocks, block_rows): (
            Vec<TokenStream>,
            Vec<TokenStream>,
            Vec<TokenStream>,
            TokenStream,
        ) = if by_blocks {
            (
                out_args
                    .iter()
                    .zip(&per_row)
                    .map(|(o, p)| quote!(#o.whole_block().rows(#p)))
                    .collect(),
                out_args
                    .iter()
                    .zip(&per_row)
                    .map(|(o, p)| quote!(#o.par_blocks(__block * #p)))
                    .collect(),
                chunk_names
                    .iter()
                    .zip(&per_row)
                    .map(|(c, p)| quote!(let #c = #c.rows(#p);))
                    .collect(),
                quote!(let __block = __chunk;),
            )
        } else {
            (
                out_args.iter().map(|o| quote!(&mut #o[..])).collect(),
                out_args
                    .iter()
                    .zip(&per_row)
                    .map(|(o, p)| quote!(#o.par_chunks_mut(__block * #p)))
                    .collect(),
                Vec::new(),
                quote!(let __block = __chunk;),
            )
        };
        let first_per_row = &per_row[0];
        let gid0 = chain[0];
        let label = chain
            .iter()
            .map(|&g| self.profile_labels[g].clone())
            .collect::<Vec<_>>()
            .join(" | ");
        quote! {
            let __t = __ctx.start();
            #allocs
            #(#pre)*
            ::grafo::__private::multiversion! {
                fn #kname(__first: usize, __nrows: usize, __n: usize, #(#out_params,)* #(#params),*) {
                    #rebind
                    for __ri in 0..__nrows {
                        let __r = __first + __ri;
                        #(#row_bind)*
                        #body
                    }
                }
            }
            {
                let __rows: usize = #rows;
                let __n: usize = #row_len;
                let __chunk = ::grafo::__private::parallel::units_per_chunk(__rows, __n * #cost + 1);
                if __rows > 0 {
                    if __chunk >= __rows || __n == 0 {
                        #kname(0, __rows, __n, #(#whole,)* #(#args),*);
                    } else {
                        use ::grafo::__private::rayon::prelude::*;
                        #block_rows
                        (#(#blocks,)*)
                            .into_par_iter()
                            .enumerate()
                            .for_each(|(__i, (#(#chunk_names,)*))| {
                                let __nrows = #first_chunk.len() / #first_per_row;
                                #(#init_blocks)*
                                #kname(__i * __block, __nrows, __n, #(#chunk_names,)* #(#args),*)
                            });
                    }
                }
            }
            #finish_outs
            __ctx.record(#gid0, #label, __t);
        }
    }

    /// The frees the buffer plan puts after group `gid`.
    fn frees(&mut self, gid: usize) -> TokenStream {
        let mut out = TokenStream::new();
        for &f in &self.sched.frees_after[gid] {
            if self.moved.contains(&f) || self.store.get(&f) != Some(&Store::Owned) {
                continue;
            }
            if !self.may_move(f) {
                self.deferred.push(f);
                continue;
            }
            let vid = v(f);
            let et = elem_ty(self.node(f).dtype);
            if let Some(s) = self.sched.slot[f.0] {
                out.extend(quote!(__ctx.give::<#et>(#s, #vid);));
                self.moved.push(f);
            } else if let Op::CondOut { cond, index } = self.node(f).op {
                // Back to the slot of the arm value that was moved into it.
                let c = &self.graph.conds[cond.0];
                let slot_of = |x: NodeId| self.sched.slot[x.0];
                let (ts, es) = (
                    slot_of(c.then_outputs[index]),
                    slot_of(c.else_outputs[index]),
                );
                let flag = format_ident!("__took_then_{}", cond.0);
                let give = |s: Option<usize>| match s {
                    Some(s) => quote!(__ctx.give::<#et>(#s, #vid);),
                    None => quote!(::std::mem::drop(#vid);),
                };
                let (gt, ge) = (give(ts), give(es));
                out.extend(quote!(if #flag { #gt } else { #ge }));
                self.moved.push(f);
            }
        }
        out
    }

    /// Where the buffer of `id`'s value comes from, recorded as owned (and the input it
    /// overwrites as moved): shared by [`Self::alloc`] and [`Self::alloc_written`].
    fn buffer_source(&mut self, id: NodeId) -> BufferSource {
        self.store.insert(id, Store::Owned);
        if let Some(l) = self.sched.in_place[id.0] {
            if self.store.get(&l) == Some(&Store::Owned)
                && !self.moved.contains(&l)
                && self.may_move(l)
            {
                self.moved.push(l);
                return BufferSource::InPlace(v(l));
            }
        }
        match self.sched.slot[id.0] {
            Some(s) => BufferSource::Slot(s),
            None => BufferSource::Fresh,
        }
    }

    /// Declares the output buffer of a group's value.
    fn alloc(&mut self, id: NodeId) -> TokenStream {
        let n = self.node(id);
        let (et, len, op, vid) = (elem_ty(n.dtype), len_expr(&n.shape), n.op.name(), v(id));
        match self.buffer_source(id) {
            BufferSource::InPlace(lid) => quote!(let mut #vid: ::std::vec::Vec<#et> = #lid;),
            BufferSource::Slot(s) => {
                quote!(let mut #vid: ::std::vec::Vec<#et> = __ctx.take::<#et>(#s, #len, #op)?;)
            }
            BufferSource::Fresh => {
                quote!(let mut #vid: ::std::vec::Vec<#et> = ::grafo::__private::compiled::fresh::<#et>(#op, #len)?;)
            }
        }
    }

    /// As [`Self::alloc`], for a node whose runtime kernel writes its buffer itself: `body`
    /// (a closure over `&mut compiled::OutBuf`) gets the slot's reused buffer, the buffer of
    /// the input it overwrites, or a fresh one nothing has initialised.
    fn alloc_written(&mut self, id: NodeId, body: TokenStream) -> TokenStream {
        let n = self.node(id);
        let (et, len, op, vid) = (elem_ty(n.dtype), len_expr(&n.shape), n.op.name(), v(id));
        match self.buffer_source(id) {
            BufferSource::InPlace(lid) => quote! {
                let mut #vid: ::std::vec::Vec<#et> = {
                    let mut __buf = ::grafo::__private::compiled::OutBuf::reused(#lid);
                    (#body)(&mut __buf);
                    __buf.into_vec()
                };
            },
            BufferSource::Slot(s) => {
                quote!(let mut #vid: ::std::vec::Vec<#et> = __ctx.take_with::<#et>(#s, #len, #op, #body)?;)
            }
            BufferSource::Fresh => {
                quote!(let mut #vid: ::std::vec::Vec<#et> = ::grafo::__private::compiled::fresh_with::<#et>(#op, #len, #body)?;)
            }
        }
    }

    fn group(&mut self, g: &Group) -> TokenStream {
        match g.kind {
            GroupKind::Scalar => {
                let e = self.tree_scalar(g.root);
                let vid = v(g.root);
                let et = elem_ty(self.node(g.root).dtype);
                self.store.insert(g.root, Store::Scalar);
                quote!(let #vid: #et = #e;)
            }
            GroupKind::Elementwise => self.elementwise(g),
            GroupKind::MatMul | GroupKind::Conv2d | GroupKind::ConvPool => self.linalg(g),
            GroupKind::Reduce => self.reduce(g),
            GroupKind::Pool => {
                let n = self.node(g.root).clone();
                let Op::Pool {
                    kind,
                    ksize,
                    strides,
                    padding,
                } = n.op
                else {
                    unreachable!("pool group")
                };
                let x = self.slice(n.inputs[0]);
                let in_shape = shape_expr(&self.node(n.inputs[0]).shape);
                let pool = pool_tokens(kind, ksize, strides, padding);
                let alloc = self.alloc(g.root);
                let vid = v(g.root);
                quote! {
                    #alloc
                    ::grafo::__private::pool::pool2d_into(#x, #in_shape, #pool, &mut #vid[..]);
                }
            }
            GroupKind::Softmax => {
                let n = self.node(g.root).clone();
                let Op::Softmax { axis, log } = n.op else {
                    unreachable!("softmax group")
                };
                let x = self.slice(n.inputs[0]);
                let shape = shape_expr(&n.shape);
                let alloc = self.alloc(g.root);
                let vid = v(g.root);
                quote! {
                    #alloc
                    ::grafo::__private::softmax::softmax_into(#x, &#shape, #axis, #log, &mut #vid[..]);
                }
            }
            GroupKind::Transpose => {
                let n = self.node(g.root).clone();
                let Op::Transpose { perm } = &n.op else {
                    unreachable!("transpose group")
                };
                let x = self.slice(n.inputs[0]);
                let in_shape = shape_expr(&self.node(n.inputs[0]).shape);
                let alloc = self.alloc(g.root);
                let vid = v(g.root);
                quote! {
                    #alloc
                    ::grafo::__private::layout::transpose_into(#x, &#in_shape, &[#(#perm),*], &mut #vid[..]);
                }
            }
            GroupKind::View => {
                let n = self.node(g.root).clone();
                let input = n.inputs[0];
                let in_scalar = self.node(input).shape.is_empty()
                    || self.store.get(&input) == Some(&Store::Scalar)
                    || !self.plan.materialised[input.0];
                let vid = v(g.root);
                let et = elem_ty(n.dtype);
                if n.shape.is_empty() {
                    let e = self.scalar_value(input);
                    self.store.insert(g.root, Store::Scalar);
                    quote!(let #vid: #et = #e;)
                } else if in_scalar {
                    let e = self.scalar_value(input);
                    self.store.insert(g.root, Store::Owned);
                    quote!(let #vid: ::std::vec::Vec<#et> = ::std::vec![#e];)
                } else {
                    self.store.insert(g.root, Store::Alias(input));
                    quote!()
                }
            }
            GroupKind::Assert => self.assert(g),
            GroupKind::Cond => self.cond(g),
            GroupKind::Selection => self.selection(g),
        }
    }

    /// A rank-0 elementwise expression over scalar locals.
    fn tree_scalar(&self, id: NodeId) -> TokenStream {
        let n = self.node(id);
        let args: Vec<TokenStream> = n
            .inputs
            .iter()
            .map(|&i| {
                let inode = self.node(i);
                if self.plan.materialised[i.0] && !inode.shape.is_empty() {
                    // A rank>0 operand of a rank-0 result cannot happen (broadcasting only grows).
                    let s = self.slice(i);
                    quote!((#s)[0])
                } else if self.plan.materialised[i.0] {
                    self.scalar_value(i)
                } else {
                    self.tree_scalar(i)
                }
            })
            .collect();
        if matches!(n.op, Op::Const { .. } | Op::Host { .. }) {
            return scalar_op(self.graph, id, &[]);
        }
        scalar_op(self.graph, id, &args)
    }

    /// Leaf parameters of a planned loop: (params, call args, per-row bindings, element reads);
    /// `skip` is a leaf read some other way (from the output it is written over).
    fn leaves(&self, lp: &LoopPlan, skip: Option<NodeId>) -> LoopLeaves {
        let mut leaves = lp.leaves.clone();
        if let Some(s) = skip {
            leaves.retain(|&(l, _)| l != s);
        }
        self.leaves_of(&leaves, &lp.shape, lp.split, lp.flat)
    }

    /// Loop parameters and reads for the given leaves (see [`Emitter::leaves`]).
    fn leaves_of(
        &self,
        leaves: &[(NodeId, LeafClass)],
        out_shape: &[Dim],
        split: usize,
        flat: bool,
    ) -> LoopLeaves {
        let mut ll = LoopLeaves::default();
        let out_dims = shape_expr(out_shape);
        for (k, &(l, class)) in leaves.iter().enumerate() {
            let ln = self.node(l);
            let et = elem_ty(ln.dtype);
            let p = format_ident!("__l{}", k);
            let b = format_ident!("__b{}", k);
            if class == LeafClass::Scalar {
                let val = if ln.shape.is_empty() {
                    self.scalar_value(l)
                } else {
                    let s = self.slice(l);
                    quote!((#s)[0])
                };
                ll.params.push(quote!(#p: #et));
                ll.args.push(val);
                ll.reads.insert(l, quote!(#p));
                continue;
            }
            let s = self.slice(l);
            ll.params.push(quote!(#p: &[#et]));
            ll.args.push(s);
            if flat {
                ll.row_bind
                    .push(quote!(let #p = &#p[__first..__first + __n];));
                ll.reads.insert(l, quote!(#p[__j]));
                ll.slices.push(p.clone());
                continue;
            }
            ll.classes.push((p.clone(), class));
            match class {
                LeafClass::Full => {
                    ll.row_bind
                        .push(quote!(let #p = &#p[__r * __n..__r * __n + __n];));
                    ll.reads.insert(l, quote!(#p[__j]));
                    ll.slices.push(p.clone());
                }
                LeafClass::RowVec => {
                    ll.row_bind.push(quote!(let #p = &#p[..__n];));
                    ll.reads.insert(l, quote!(#p[__j]));
                    ll.slices.push(p.clone());
                }
                LeafClass::RowScalar => {
                    ll.row_bind.push(quote!(let #p = #p[__r];));
                    ll.reads.insert(l, quote!(#p));
                }
                LeafClass::RowSliceAt | LeafClass::RowScalarAt => {
                    let lshape = shape_expr(&ln.shape);
                    ll.params
                        .push(quote!(#b: &::grafo::__private::compiled::RowBroadcast));
                    ll.pre.push(quote!(let #b = ::grafo::__private::compiled::RowBroadcast::new(&#out_dims, &#lshape, #split);));
                    ll.args.push(quote!(&#b));
                    if class == LeafClass::RowSliceAt {
                        ll.row_bind
                            .push(quote!(let #p = &#p[#b.offset(__r)..][..__n];));
                        ll.reads.insert(l, quote!(#p[__j]));
                        ll.slices.push(p.clone());
                    } else {
                        ll.row_bind.push(quote!(let #p = #p[#b.offset(__r)];));
                        ll.reads.insert(l, quote!(#p));
                    }
                }
                LeafClass::Scalar => unreachable!("handled above"),
            }
        }
        ll
    }

    /// `let` statements computing the fused tree rooted at `root` for element `__j`; returns them and the root's expression.
    fn tree_lets(
        &self,
        ops: &[NodeId],
        root: NodeId,
        reads: &HashMap<NodeId, TokenStream>,
    ) -> (TokenStream, TokenStream) {
        let mut lets = TokenStream::new();
        let exprs = self.visit_fused_ops(ops, reads, |op| lets.extend(op.let_t()));
        let root_expr = exprs
            .get(&root)
            .cloned()
            .unwrap_or_else(|| quote!(compile_error!("internal: missing root")));
        (lets, root_expr)
    }

    /// Walks the ops of a fused tree in order, rendering each op not in `reads` as
    /// `FusedOp` (its operands' expressions computed before it, constants and host values in
    /// place) for `visit`, which binds it as `__t<id>`; returns every value's expression.
    fn visit_fused_ops(
        &self,
        ops: &[NodeId],
        reads: &HashMap<NodeId, TokenStream>,
        mut visit: impl FnMut(FusedOp<'_>),
    ) -> HashMap<NodeId, TokenStream> {
        let mut exprs: HashMap<NodeId, TokenStream> = reads.clone();
        for &id in ops {
            if let Some(e) = reads.get(&id) {
                exprs.insert(id, e.clone());
                continue;
            }
            let node = self.node(id);
            let args: Vec<TokenStream> = node
                .inputs
                .iter()
                .map(|&i| {
                    exprs
                        .get(&i)
                        .cloned()
                        .unwrap_or_else(|| scalar_op(self.graph, i, &[]))
                })
                .collect();
            let expr = scalar_op(self.graph, id, &args);
            let t = format_ident!("__t{}", id.0);
            visit(FusedOp {
                id,
                node,
                t: t.clone(),
                et: elem_ty(node.dtype),
                expr,
                args,
                computed: &exprs,
            });
            exprs.insert(id, quote!(#t));
        }
        exprs
    }

    /// The fused tree of a row-fused elementwise group whose float divisions include one by
    /// a row-invariant divisor (W4's `(x - mean) / sqrt(var + eps)`, a softmax's `e / sum`),
    /// or `None`. The invariant part is hoisted out of the element loop, where each such
    /// divisor becomes a `SharedDivisor`; the fast element code divides through it and
    /// returns a range check, the exact code is the plain tree (the row's fallback).
    fn shared_division_tree(
        &self,
        ops: &[NodeId],
        root: NodeId,
        reads: &HashMap<NodeId, TokenStream>,
        row_invariant: &HashSet<NodeId>,
    ) -> Option<SharedDivisionTree> {
        let mut invariant = row_invariant.clone();
        // Operands not computed in the tree are constants, rendered in place.
        let is_invariant =
            |i: &NodeId, computed: &HashMap<NodeId, TokenStream>, inv: &HashSet<NodeId>| {
                !computed.contains_key(i) || inv.contains(i)
            };
        let (mut hoisted, mut exact, mut fast) =
            (TokenStream::new(), TokenStream::new(), TokenStream::new());
        let mut divisors: Vec<Ident> = Vec::new();
        let mut checks: Vec<Ident> = Vec::new();
        let mut div_dtype: Option<DType> = None;
        let exprs = self.visit_fused_ops(ops, reads, |op| {
            let n = op.node;
            let let_t = op.let_t();
            if n.inputs
                .iter()
                .all(|i| is_invariant(i, op.computed, &invariant))
            {
                hoisted.extend(let_t);
                invariant.insert(op.id);
            } else if matches!(n.op, Op::Binary(BinaryOp::Div))
                && matches!(n.dtype, DType::F32 | DType::F64)
                && div_dtype.is_none_or(|d| d == n.dtype)
                && is_invariant(&n.inputs[1], op.computed, &invariant)
            {
                div_dtype = Some(n.dtype);
                let (t, et) = (&op.t, &op.et);
                let d = format_ident!("__dv{}", op.id.0);
                let k = format_ident!("__k{}", op.id.0);
                let (a, b) = (&op.args[0], &op.args[1]);
                hoisted.extend(
                    quote!(let #d = ::grafo::__private::division::SharedDivisor::<#et>::new(#b);),
                );
                fast.extend(quote!(let (#t, #k) = #d.div(#a);));
                exact.extend(let_t);
                divisors.push(d);
                checks.push(k);
            } else {
                fast.extend(let_t.clone());
                exact.extend(let_t);
            }
        });
        let div_dtype = div_dtype?;
        let root_expr = exprs.get(&root)?.clone();
        let first = &checks[0];
        let rest = &checks[1..];
        Some(SharedDivisionTree {
            hoisted,
            exact,
            fast,
            fast_cond: quote!(true #(&& #divisors.fast())*),
            check: quote!(#first #(.max(#rest))*),
            div_ty: elem_ty(div_dtype),
            root: root_expr,
        })
    }

    fn kernel_name(&self, g: &Group) -> Ident {
        format_ident!("__grafo_kernel_g{}", g.id)
    }

    fn cost(&self, g: &Group) -> usize {
        g.nodes
            .iter()
            .map(|&n| {
                if matches!(self.node(n).op, Op::Unary(u) if u.needs_float()) {
                    8
                } else {
                    1
                }
            })
            .sum::<usize>()
            .max(1)
    }

    fn elementwise(&mut self, g: &Group) -> TokenStream {
        let root = g.root;
        let n = self.node(root).clone();
        let et = elem_ty(n.dtype);
        let lp = self.loop_plan(g);
        let flat = lp.flat;
        // Written in place over a dead input: that input is read from the output itself.
        let in_place = self.sched.in_place[root.0].filter(|&l| {
            self.store.get(&l) == Some(&Store::Owned)
                && !self.moved.contains(&l)
                && self.may_move(l)
        });
        let mut ll = self.leaves(&lp, in_place);
        if let Some(l) = in_place {
            let read = if flat {
                quote!(__out[__j])
            } else {
                quote!(__orow[__j])
            };
            ll.reads.insert(l, read);
        }
        let (lets, root_expr) = self.tree_lets(&lp.ops, lp.element, &ll.reads);
        let kname = self.kernel_name(g);
        // A result not written over a dead input is made by the call that runs the kernel
        // (`ExecCtx::take_written` for a slot, `compiled::fresh_by_blocks` otherwise), so a
        // new buffer is initialised block by block as the kernel writes it.
        let fresh = in_place.is_none();
        let op = n.op.name();
        let len = len_expr(&n.shape);
        let cost = self.cost(g);
        let make = |unit: TokenStream, work: TokenStream, kernel: TokenStream| match self.sched.slot
            [root.0]
        {
            Some(s) => quote!(__ctx.take_written::<#et, _>(#s, #len, #op, #unit, #work, #kernel)?),
            None => {
                quote!(::grafo::__private::compiled::fresh_by_blocks::<#et, _>(#op, #len, #unit, #work, #kernel)?)
            }
        };
        let vid = v(root);
        let alloc = if fresh {
            self.store.insert(root, Store::Owned);
            TokenStream::new()
        } else {
            self.alloc(root)
        };

        let LoopLeaves {
            params,
            args,
            row_bind,
            pre,
            ..
        } = ll;
        if flat {
            let run = if fresh {
                let made = make(
                    quote!(1),
                    quote!(#cost),
                    quote!(|__first, __chunk| #kname(__first, __chunk #(, #args)*)),
                );
                quote!(let mut #vid: ::std::vec::Vec<#et> = #made;)
            } else {
                quote!(::grafo::__private::parallel::for_each_chunk(&mut #vid[..], 1, #cost, |__first, __chunk| #kname(__first, __chunk #(, #args)*));)
            };
            // A fresh result's kernel gets its block write-only and stores each element once.
            let kernel = if fresh {
                quote! {
                    fn #kname(__first: usize, __out: ::grafo::__private::compiled::OutBlock<'_, #et> #(, #params)*) {
                        let __n = __out.len();
                        #(#row_bind)*
                        __out.write_with(#[inline(always)] |__j: usize| -> #et {
                            #lets
                            #root_expr
                        });
                    }
                }
            } else {
                quote! {
                    fn #kname(__first: usize, __out: &mut [#et] #(, #params)*) {
                        let __n = __out.len();
                        #(#row_bind)*
                        for __j in 0..__n {
                            #lets
                            __out[__j] = #root_expr;
                        }
                    }
                }
            };
            quote! {
                #alloc
                ::grafo::__private::multiversion! { #kernel }
                #run
            }
        } else {
            let row = super::dim_expr(&lp.shape[lp.split]);
            let kernel = if fresh {
                rows_writer_kernel(&kname, &et, &params, &row_bind, &lets, &root_expr)
            } else {
                rows_kernel(&kname, &et, &params, &row_bind, &lets, &root_expr)
            };
            let run = if fresh {
                let made = make(
                    quote!(__row),
                    quote!(__row * #cost),
                    quote!(|__first, __chunk| #kname(__first, __chunk, __row #(, #args)*)),
                );
                quote! {
                    let __row: usize = #row;
                    let mut #vid: ::std::vec::Vec<#et> = #made;
                }
            } else {
                quote! {
                    if #len > 0 {
                        let __row: usize = #row;
                        ::grafo::__private::parallel::for_each_chunk(&mut #vid[..], __row, __row * #cost, |__first, __chunk| #kname(__first, __chunk, __row #(, #args)*));
                    }
                }
            };
            quote! {
                #alloc
                #(#pre)*
                #kernel
                #run
            }
        }
    }

    /// `matmul` / `conv2d`, with the fused elementwise tail applied to each output block.
    fn linalg(&mut self, g: &Group) -> TokenStream {
        let anchor = g.anchor.unwrap_or(g.root);
        let an = self.node(anchor).clone();
        let root = self.node(g.root).clone();
        let et = elem_ty(root.dtype);
        let (a, b) = (an.inputs[0], an.inputs[1]);
        let (sa, sb) = (self.slice(a), self.slice(b));
        let (shape_a, shape_b) = (self.node(a).shape.clone(), self.node(b).shape.clone());
        let kname = self.kernel_name(g);
        let mut pre = TokenStream::new();
        let epilogue = if self.plan.loops[g.id].is_some() {
            let lp = self.loop_plan(g);
            let mut ll = self.leaves(&lp, None);
            // The kernel's output block, read in place.
            if let Some(a) = lp.reads_output {
                ll.reads.insert(a, quote!(__orow[__j]));
            }
            let (lets, root_expr) = self.tree_lets(&lp.ops, lp.element, &ll.reads);
            let LoopLeaves {
                params,
                args,
                row_bind,
                pre: p,
                classes,
                ..
            } = ll;
            pre.extend(p);
            let row = super::dim_expr(&lp.shape[lp.split]);
            let kernel = match &lp.shape[lp.split] {
                // Short rows of a known length (conv2d's channels): several rows a loop step.
                Dim::Const(n)
                    if (1..=MULTI_ROW_MAX).contains(&(*n as usize))
                        && classes
                            .iter()
                            .all(|(_, c)| matches!(c, LeafClass::Full | LeafClass::RowVec)) =>
                {
                    multi_rows_kernel(
                        &kname,
                        &et,
                        &params,
                        &classes,
                        &lets,
                        &root_expr,
                        *n as usize,
                    )
                }
                _ => rows_kernel(&kname, &et, &params, &row_bind, &lets, &root_expr),
            };
            pre.extend(quote! {
                #kernel
                let __row: usize = #row;
            });
            Some((quote!(#kname), args))
        } else {
            None
        };
        // A plain conv2d's buffer is made by `alloc_written` below, with its kernel.
        let writes_itself = matches!(an.op, Op::Conv2d { .. }) && g.kind != GroupKind::ConvPool;
        let alloc = if writes_itself {
            TokenStream::new()
        } else {
            self.alloc(g.root)
        };
        let vid = v(g.root);
        match an.op {
            Op::MatMul {
                transpose_a,
                transpose_b,
            } => {
                let d = |s: &[Dim], i: usize| super::dim_expr(&s[i]);
                let (ra, rb) = (shape_a.len(), shape_b.len());
                // The stored `a` is `[.., k, m]` when it is read transposed.
                let (m, k) = if transpose_a {
                    (d(&shape_a, ra - 1), d(&shape_a, ra - 2))
                } else {
                    (d(&shape_a, ra - 2), d(&shape_a, ra - 1))
                };
                // The stored `b` is `[.., n, k]` when it is read transposed.
                let nn = d(&shape_b, if transpose_b { rb - 2 } else { rb - 1 });
                let a_batch = shape_expr(&shape_a[..ra - 2]);
                let b_batch = shape_expr(&shape_b[..rb - 2]);
                let call_epi = match &epilogue {
                    Some((kn, args)) => {
                        quote!(|__batch: usize, __row0: usize, __block: &mut [#et]| if __row > 0 { #kn(__batch * __m + __row0, __block, __row #(, #args)*) })
                    }
                    None => quote!(::grafo::__private::matmul::no_epilogue),
                };
                quote! {
                    #alloc
                    #pre
                    let __m: usize = #m;
                    let __spec = ::grafo::__private::matmul_nd::NdMatmul { a_batch: &#a_batch, b_batch: &#b_batch, m: __m, k: #k, n: #nn, a_transposed: #transpose_a, b_transposed: #transpose_b };
                    ::grafo::__private::matmul_nd::matmul_nd_into(#sa, #sb, &mut #vid[..], __spec, #call_epi);
                }
            }
            Op::Conv2d { stride, padding } => {
                let xs = shape_expr(&shape_a);
                let ks = shape_expr(&shape_b);
                let pad = match padding {
                    Padding::Same => quote!(::grafo::__private::conv::Padding::Same),
                    Padding::Valid => quote!(::grafo::__private::conv::Padding::Valid),
                };
                let call_epi = match &epilogue {
                    Some((kn, args)) => {
                        quote!(|__p0: usize, __block: &mut [#et]| if __row > 0 { #kn(__p0, __block, __row #(, #args)*) })
                    }
                    None => quote!(|_: usize, _: &mut [#et]| {}),
                };
                if g.kind == GroupKind::ConvPool {
                    let Op::Pool {
                        kind,
                        ksize,
                        strides,
                        padding,
                    } = root.op
                    else {
                        unreachable!("a conv2d + pooling group's root is its pooling")
                    };
                    let pool = pool_tokens(kind, ksize, strides, padding);
                    return quote! {
                        #alloc
                        #pre
                        ::grafo::__private::conv_pool::conv2d_pool_into(#sa, #xs, #sb, #ks, #stride, #pad, #pool, &mut #vid[..], #call_epi);
                    };
                }
                // The conv2d kernel stores every element of its output once: a fresh result
                // is not zeroed first.
                // A reduction of the result records its partial sums block by block while
                // each block of the output is in cache.
                let (lanes_decl, observe) = match g.records_for {
                    Some(r) => {
                        let rroot = self.plan.groups[r].root;
                        let lanes = lanes_ident(rroot);
                        let summand = match self.node(rroot).op {
                            Op::Norm => quote!(Squares),
                            _ => quote!(Values),
                        };
                        let len = len_expr(&root.shape);
                        (
                            quote!(let #lanes = ::grafo::__private::reduce_blocks::BlockLanes::new(#len, ::grafo::__private::reduce_blocks::Summand::#summand);),
                            quote!(|__e0: usize, __done: &[#et]| #lanes.record(__e0, __done)),
                        )
                    }
                    None => (TokenStream::new(), quote!(|_: usize, _: &[#et]| {})),
                };
                let written = self.alloc_written(
                    g.root,
                    quote!(|__out: &mut ::grafo::__private::compiled::OutBuf<#et>| {
                        ::grafo::__private::conv::conv2d_buf(#sa, #xs, #sb, #ks, #stride, #pad, __out, #call_epi, #observe)
                    }),
                );
                quote! {
                    #pre
                    #lanes_decl
                    #written
                }
            }
            Op::ConvGeneral {
                stride,
                dilation: [dh, dw],
                padding,
                depthwise,
            } => {
                let xs = shape_expr(&shape_a);
                let ks = shape_expr(&shape_b);
                let pad = match padding {
                    Padding::Same => quote!(::grafo::__private::conv::Padding::Same),
                    Padding::Valid => quote!(::grafo::__private::conv::Padding::Valid),
                };
                let call_epi = match &epilogue {
                    Some((kn, args)) => {
                        quote!(|__p0: usize, __block: &mut [#et]| if __row > 0 { #kn(__p0, __block, __row #(, #args)*) })
                    }
                    None => quote!(|_: usize, _: &mut [#et]| {}),
                };
                quote! {
                    #alloc
                    #pre
                    let __conv = ::grafo::__private::conv_general::ConvGeneral { stride: #stride, dilation: [#dh, #dw], padding: #pad, depthwise: #depthwise };
                    ::grafo::__private::conv_general::conv_general_into(#sa, #xs, #sb, #ks, __conv, &mut #vid[..], #call_epi);
                }
            }
            _ => quote!(compile_error!(
                "internal: linalg group without matmul or conv2d"
            )),
        }
    }

    fn reduce(&mut self, g: &Group) -> TokenStream {
        let rnode = self.node(g.root).clone();
        let input = rnode.inputs[0];
        let in_shape = self.node(input).shape.clone();
        let dt = rnode.dtype;
        let et = elem_ty(dt);
        let kind = match &rnode.op {
            Op::Norm => ReduceKind::Sum,
            Op::Reduce { kind, .. } => *kind,
            _ => unreachable!("reduce group"),
        };
        let Some(lp) = self.plan.loops[g.id].clone() else {
            // General axes: the runtime's strided reduction over the materialised input.
            let x = if in_shape.is_empty() {
                let e = self.scalar_value(input);
                quote!(&[#e][..])
            } else {
                self.slice(input)
            };
            let Op::Reduce { axes, .. } = &rnode.op else {
                // The f64 norm (and a norm of a scalar): the runtime's, scaled so it cannot overflow.
                let f = format_ident!("norm_{}", dt.name());
                let vid = v(g.root);
                self.store.insert(g.root, Store::Scalar);
                return quote!(let #vid: #et = ::grafo::__private::reduce::#f(#x););
            };
            let kind_t = match kind {
                ReduceKind::Sum => quote!(Sum),
                ReduceKind::Mean => quote!(Mean),
                ReduceKind::Max => quote!(Max),
                ReduceKind::Min => quote!(Min),
            };
            let shape = shape_expr(&in_shape);
            if rnode.shape.is_empty() {
                let vid = v(g.root);
                self.store.insert(g.root, Store::Scalar);
                return quote! {
                    let mut __tmp: [#et; 1] = [<#et as ::std::default::Default>::default()];
                    ::grafo::__private::reduce::reduce_into(#x, &#shape, &[#(#axes),*], ::grafo::__private::reduce::ReduceKind::#kind_t, &mut __tmp[..]);
                    let #vid: #et = __tmp[0];
                };
            }
            let alloc = self.alloc(g.root);
            let vid = v(g.root);
            return quote! {
                #alloc
                ::grafo::__private::reduce::reduce_into(#x, &#shape, &[#(#axes),*], ::grafo::__private::reduce::ReduceKind::#kind_t, &mut #vid[..]);
            };
        };
        let all_axes = lp.kind == LoopKind::WholeReduction;
        let flat = lp.flat;
        // Without a fused producer the plan's only leaf is the input itself, read in full.
        let mut ll = self.leaves(&lp, None);
        let rc = self.reduction_code(g, &ll.reads, &ll.slices);
        let (accumulate, acc_t, init, combine_partials_all) =
            (rc.accumulate, rc.acc_t, rc.init, rc.combine_partials);
        let finish = rc.finish;
        let kname = self.kernel_name(g);
        let cost = self.cost(g);
        let LoopLeaves {
            params,
            args,
            row_bind,
            pre,
            ..
        } = std::mem::take(&mut ll);
        let in_len = len_expr(&in_shape);
        if all_axes {
            let combine_partials = combine_partials_all;
            let (kernel, call) = if g.recorded_by.is_some() {
                // The convolution that wrote the input recorded the partial sums of its blocks.
                let lanes = lanes_ident(g.root);
                let x = self.slice(input);
                (TokenStream::new(), quote!(#lanes.total(#x)))
            } else if flat {
                (
                    quote! {
                        fn #kname(__first: usize, __end: usize #(, #params)*) -> #acc_t {
                            let __n = __end - __first;
                            #(#row_bind)*
                            #accumulate
                            __total
                        }
                    },
                    // Fixed segments, as the runtime's reductions: the bits do not depend on the threads.
                    quote!(::grafo::__private::reduce::segments(#in_len, |__range: ::std::ops::Range<usize>| #kname(__range.start, __range.end #(, #args)*), |__a: #acc_t, __b: #acc_t| #combine_partials)),
                )
            } else {
                let row = super::dim_expr(&in_shape[in_shape.len() - 1]);
                (
                    quote! {
                        fn #kname(__start: usize, __end: usize, __row: usize #(, #params)*) -> #acc_t {
                            let mut __sum: #acc_t = #init;
                            for __r in __start..__end {
                                let __n = __row;
                                #(#row_bind)*
                                #accumulate
                                let (__a, __b) = (__sum, __total);
                                __sum = #combine_partials;
                            }
                            __sum
                        }
                    },
                    quote!({
                        let __row: usize = #row;
                        let __rows: usize = if __row == 0 { 0 } else { #in_len / __row };
                        ::grafo::__private::parallel::map_reduce(__rows, __row * #cost, |__range: ::std::ops::Range<usize>| #kname(__range.start, __range.end, __row #(, #args)*), |__a: #acc_t, __b: #acc_t| #combine_partials)
                    }),
                )
            };
            let fin = finish(quote!(__grand), in_len.clone());
            let vid = v(g.root);
            let kernel = if kernel.is_empty() {
                kernel
            } else {
                quote!(::grafo::__private::multiversion! { #kernel })
            };
            if rnode.shape.is_empty() {
                self.store.insert(g.root, Store::Scalar);
                return quote! {
                    #(#pre)*
                    #kernel
                    let __grand: #acc_t = #call;
                    let #vid: #et = #fin;
                };
            }
            let alloc = self.alloc(g.root);
            return quote! {
                #(#pre)*
                #alloc
                #kernel
                let __grand: #acc_t = #call;
                #vid[0] = #fin;
            };
        }
        // Trailing axes: one output element per row.
        let row_len = len_expr(&in_shape[lp.split..]);
        let fin = finish(quote!(__total), quote!(__n));
        let alloc = self.alloc(g.root);
        let vid = v(g.root);
        quote! {
            #alloc
            #(#pre)*
            ::grafo::__private::multiversion! {
                fn #kname(__first: usize, __out: &mut [#et], __row: usize #(, #params)*) {
                    for (__ri, __o) in __out.iter_mut().enumerate() {
                        let __r = __first + __ri;
                        let __n = __row;
                        #(#row_bind)*
                        #accumulate
                        *__o = #fin;
                    }
                }
            }
            let __row: usize = #row_len;
            ::grafo::__private::parallel::for_each_chunk(&mut #vid[..], 1, __row * #cost + 1, |__first, __chunk| #kname(__first, __chunk, __row #(, #args)*));
        }
    }

    /// The loop of a reduction over `__n` elements (the leaves read through `reads`, the slice
    /// leaves re-sliced per chunk), leaving its accumulator in `__total`; with the
    /// accumulator's type and identity, how two partial results combine, and how a total
    /// over a count finishes (mean, norm).
    fn reduction_code(
        &self,
        g: &Group,
        reads: &HashMap<NodeId, TokenStream>,
        slices: &[Ident],
    ) -> ReductionCode {
        let rnode = self.node(g.root).clone();
        let dt = rnode.dtype;
        let et = elem_ty(dt);
        let (kind, is_norm) = match &rnode.op {
            Op::Norm => (ReduceKind::Sum, true),
            Op::Reduce { kind, .. } => (*kind, false),
            _ => unreachable!("reduce group"),
        };
        // Accumulate f32 in f64 lanes; others in their own type.
        let acc_t = if dt == DType::F32 {
            quote!(f64)
        } else {
            et.clone()
        };
        let num = numeric();
        let (init, combine): (
            TokenStream,
            Box<dyn Fn(TokenStream, TokenStream) -> TokenStream>,
        ) = match kind {
            ReduceKind::Sum | ReduceKind::Mean if dt.is_float() => {
                (quote!(0.0), Box::new(|a, b| quote!(#a + #b)))
            }
            ReduceKind::Sum | ReduceKind::Mean => (
                quote!(0),
                Box::new(|a, b| quote!(::grafo::__private::Numeric::add(#a, #b))),
            ),
            ReduceKind::Max => (
                quote!(<#et as ::grafo::__private::Numeric>::LOWEST),
                Box::new(|a, b| quote!(::grafo::__private::Numeric::maximum(#a, #b))),
            ),
            ReduceKind::Min => (
                quote!(<#et as ::grafo::__private::Numeric>::HIGHEST),
                Box::new(|a, b| quote!(::grafo::__private::Numeric::minimum(#a, #b))),
            ),
        };
        let acc_t = if matches!(kind, ReduceKind::Max | ReduceKind::Min) {
            et.clone()
        } else {
            acc_t
        };
        let to_acc = |e: TokenStream| -> TokenStream {
            if dt == DType::F32 && !matches!(kind, ReduceKind::Max | ReduceKind::Min) {
                quote!((#e as f64))
            } else {
                e
            }
        };
        let (et_f, acc_f, num_f) = (et.clone(), acc_t.clone(), num.clone());
        let finish = move |total: TokenStream, count: TokenStream| -> TokenStream {
            let (et, acc_t, num) = (&et_f, &acc_f, &num_f);
            match (kind, is_norm) {
                (_, true) => quote!((#total.sqrt() as #et)),
                (ReduceKind::Mean, _) if dt.is_float() => {
                    quote!(((#total / (#count as #acc_t)) as #et))
                }
                (ReduceKind::Mean, _) => quote!(#num::div(#total, #count as #et)),
                _ if dt == DType::F32 => quote!((#total as #et)),
                _ => total,
            }
        };
        // The value reduced per element: the planned producer expression, or the input read as it is.
        let lp = self.loop_plan(g);
        let (lets, val) = self.tree_lets(&lp.ops, lp.element, reads);
        // The type of the lanes: the element type, but f64 for an f32 norm (its squares
        // would overflow f32 above 1.8e19).
        let lane_t = acc_t.clone();
        let val = if is_norm {
            quote!({ let __v = (#val) as #lane_t; __v * __v })
        } else {
            to_acc(val)
        };
        // Lanes of the accumulator type (f64 for f32 sums, means and norms) over fixed-size
        // chunks (so the loop vectorises), folded into the total once per block of chunks:
        // the order of the runtime's reductions (graph-runtime's reduce.rs), bit for bit.
        let lanes = if matches!(dt, DType::F64 | DType::I64) {
            8usize
        } else {
            16usize
        };
        let block = 64usize;
        let lane_init = match kind {
            ReduceKind::Sum | ReduceKind::Mean if dt.is_float() => quote!(0.0),
            ReduceKind::Sum | ReduceKind::Mean => quote!(0),
            _ => init.clone(),
        };
        let lane_step = combine(quote!(__acc[__j]), quote!(__val));
        let fold_lane = combine(quote!(__total), quote!(__acc[__t]));
        let fold_tail = combine(quote!(__total), quote!(__val));
        let slices = slices.to_vec();
        let accumulate = quote! {
            let __chunks = __n / #lanes;
            let mut __total: #acc_t = #init;
            let mut __c0 = 0usize;
            while __c0 < __chunks {
                let __c1 = if __chunks - __c0 > #block { __c0 + #block } else { __chunks };
                let mut __acc: [#lane_t; #lanes] = [#lane_init; #lanes];
                for __c in __c0..__c1 {
                    #(let #slices = &#slices[__c * #lanes..__c * #lanes + #lanes];)*
                    for __j in 0..#lanes {
                        #lets
                        let __val: #lane_t = #val;
                        __acc[__j] = #lane_step;
                    }
                }
                for __t in 0..#lanes {
                    __total = #fold_lane;
                }
                __c0 = __c1;
            }
            for __j in __chunks * #lanes..__n {
                #lets
                let __val: #lane_t = #val;
                __total = #fold_tail;
            }
        };
        ReductionCode {
            accumulate,
            acc_t,
            init,
            combine_partials: combine(quote!(__a), quote!(__b)),
            finish: Box::new(finish),
        }
    }

    fn assert(&mut self, g: &Group) -> TokenStream {
        let n = self.node(g.root).clone();
        let Op::Assert { kind, message } = &n.op else {
            unreachable!("assert group")
        };
        let views: Vec<TokenStream> = n
            .inputs
            .iter()
            .map(|&i| {
                let inode = self.node(i);
                if inode.shape.is_empty()
                    || !self.plan.materialised[i.0]
                    || self.store.get(&i) == Some(&Store::Scalar)
                {
                    let e = self.scalar_value(i);
                    quote!(::grafo::__private::compiled::view_of(::std::slice::from_ref(&#e), &[])?)
                } else {
                    let s = self.slice(i);
                    let sh = shape_expr(&inode.shape);
                    quote!(::grafo::__private::compiled::view_of(#s, &#sh)?)
                }
            })
            .collect();
        let f = format_ident!("{}", kind.name());
        let line = n.line;
        let last = match kind.checked_op() {
            Some(op) => quote!(#op),
            None => quote!(#message),
        };
        quote!(::grafo::eager::#f(#(#views,)* #last).map_err(|e| e.at_line(#line))?;)
    }

    fn cond(&mut self, g: &Group) -> TokenStream {
        let cid = g.cond.expect("cond group");
        let c = self.graph.conds[cid.0].clone();
        let pred = match &c.predicate {
            Predicate::Tensor(p) => self.scalar_value(*p),
            Predicate::Host(t) => quote!((#t)),
        };
        let (then_r, else_r) = Region::arms(cid);
        let moved_before = self.moved.clone();
        let store_before = self.store.clone();
        let (then_code, then_moved) = self.arm(then_r, &c.then_outputs, &c.results, g.id);
        let after_then_moved = std::mem::replace(&mut self.moved, moved_before);
        self.store = store_before.clone();
        let (else_code, else_moved) = self.arm(else_r, &c.else_outputs, &c.results, g.id);
        let after_else_moved = self.moved.clone();
        self.store = store_before;
        // Outer buffers that die at the cond: moved in one arm, given back in the other.
        let outer_dead: Vec<NodeId> = c
            .then_outputs
            .iter()
            .chain(&c.else_outputs)
            .copied()
            .filter(|&o| {
                self.node(o).region != then_r
                    && self.node(o).region != else_r
                    && self.store.get(&o) == Some(&Store::Owned)
                    && self.sched.last_use[o.0] == Some(g.id)
                    && !self.graph.outputs.contains(&o)
                    && self.may_move(o)
            })
            .collect();
        let give = |moved: &[NodeId]| -> TokenStream {
            let mut t = TokenStream::new();
            let mut done = Vec::new();
            for &o in &outer_dead {
                if moved.contains(&o) || done.contains(&o) {
                    continue;
                }
                done.push(o);
                if let Some(s) = self.sched.slot[o.0] {
                    let vid = v(o);
                    let et = elem_ty(self.node(o).dtype);
                    t.extend(quote!(__ctx.give::<#et>(#s, #vid);));
                }
            }
            t
        };
        let then_give = give(&then_moved);
        let else_give = give(&else_moved);
        let mut moved = after_then_moved;
        for m in after_else_moved
            .into_iter()
            .chain(outer_dead.iter().copied())
        {
            if !moved.contains(&m) {
                moved.push(m);
            }
        }
        self.moved = moved;
        let names: Vec<Ident> = c.results.iter().map(|&r| v(r)).collect();
        for &r in &c.results {
            let st = if self.node(r).shape.is_empty() {
                Store::Scalar
            } else {
                Store::Owned
            };
            self.store.insert(r, st);
        }
        let (then_vals, else_vals) = (then_code.1, else_code.1);
        let (then_body, else_body) = (then_code.0, else_code.0);
        let flag = format_ident!("__took_then_{}", cid.0);
        quote! {
            let #flag: bool = #pred;
            #[allow(unused_mut)]
            let (#(mut #names,)*) = if #flag {
                #then_body
                #then_give
                (#(#then_vals,)*)
            } else {
                #else_body
                #else_give
                (#(#else_vals,)*)
            };
        }
    }

    /// Emits one arm: its groups, then the values of the cond's outputs. Returns (code, values) and the outer values it moved.
    fn arm(
        &mut self,
        r: Region,
        outs: &[NodeId],
        results: &[NodeId],
        cond_group: usize,
    ) -> ((TokenStream, Vec<TokenStream>), Vec<NodeId>) {
        let code = self.region(r);
        let mut vals = Vec::new();
        let mut moved_outer = Vec::new();
        for (k, &o) in outs.iter().enumerate() {
            let result_scalar = self.node(results[k]).shape.is_empty();
            if result_scalar {
                vals.push(self.scalar_value(o));
                continue;
            }
            let inside = self.node(o).region == r;
            let owned = self.store.get(&o) == Some(&Store::Owned)
                && !self.moved.contains(&o)
                && self.may_move(o);
            let dies = inside
                || (self.sched.last_use[o.0] == Some(cond_group)
                    && !self.graph.outputs.contains(&o));
            let vid = v(o);
            if owned && dies {
                self.moved.push(o);
                if !inside {
                    moved_outer.push(o);
                }
                vals.push(quote!(#vid));
            } else if !self.store.contains_key(&o) || self.store.get(&o) == Some(&Store::Scalar) {
                let e = self.scalar_value(o);
                let len = len_expr(&self.node(o).shape);
                vals.push(quote!(::grafo::__private::buffer::filled("cond", #len, #e)?));
            } else {
                let s = self.slice(o);
                vals.push(quote!(::grafo::__private::buffer::copied("cond", #s)?));
            }
        }
        ((code, vals), moved_outer)
    }
}

/// The size in bytes of one element of `dtype`.
fn elem_bytes(dtype: DType) -> u64 {
    match dtype {
        DType::F64 | DType::I64 => 8,
        DType::F32 | DType::I32 => 4,
        DType::Bool => 1,
    }
}

/// The pieces of a reduction loop (see `Emitter::reduction_code`).
struct ReductionCode {
    accumulate: TokenStream,
    acc_t: TokenStream,
    init: TokenStream,
    combine_partials: TokenStream,
    finish: Box<dyn Fn(TokenStream, TokenStream) -> TokenStream>,
}

/// A fused loop over whole rows of `__out` (`__row` elements each): the elementwise groups'
/// kernel, and the epilogue that matmul and conv2d run on each output block.
fn rows_kernel(
    kname: &Ident,
    et: &TokenStream,
    params: &[TokenStream],
    row_bind: &[TokenStream],
    lets: &TokenStream,
    root_expr: &TokenStream,
) -> TokenStream {
    quote! {
        ::grafo::__private::multiversion! {
            fn #kname(__first: usize, __out: &mut [#et], __row: usize #(, #params)*) {
                for (__ri, __orow) in __out.chunks_exact_mut(__row).enumerate() {
                    let __r = __first + __ri;
                    let __n = __orow.len();
                    #(#row_bind)*
                    for __j in 0..__n {
                        #lets
                        __orow[__j] = #root_expr;
                    }
                }
            }
        }
    }
}

/// Rows at most this long get [`multi_rows_kernel`].
const MULTI_ROW_MAX: usize = 64;

/// Elements one step of [`multi_rows_kernel`] covers (whole rows, at least one).
const MULTI_ROW_SPAN: usize = 256;

/// [`rows_kernel`] for short rows of a static length `n` whose leaves are full-shape or
/// broadcast rows: each loop step covers `MULTI_ROW_SPAN / n` whole rows, the broadcast rows
/// tiled across them once per call. With conv2d's 16 channels the per-row loop spent more on
/// its own bookkeeping (two 8-lane iterations a row) than on the adds; the arithmetic of
/// every element is unchanged.
fn multi_rows_kernel(
    kname: &Ident,
    et: &TokenStream,
    params: &[TokenStream],
    classes: &[(Ident, LeafClass)],
    lets: &TokenStream,
    root_expr: &TokenStream,
    n: usize,
) -> TokenStream {
    let step_rows = (MULTI_ROW_SPAN / n).max(1);
    let span = step_rows * n;
    let mut tiles = Vec::new();
    let mut binds = Vec::new();
    for (p, class) in classes {
        match class {
            LeafClass::RowVec => {
                tiles.push(quote! {
                    let #p: [#et; #span] = {
                        let mut __tiled = [#p[0]; #span];
                        for __copy in __tiled.chunks_exact_mut(#n) {
                            __copy.copy_from_slice(&#p[..#n]);
                        }
                        __tiled
                    };
                });
                binds.push(quote!(let #p = &#p[..__n];));
            }
            _ => binds.push(quote!(let #p = &#p[__r * #n..__r * #n + __n];)),
        }
    }
    quote! {
        ::grafo::__private::multiversion! {
            fn #kname(__first: usize, __out: &mut [#et], __row: usize #(, #params)*) {
                #(#tiles)*
                for (__ci, __orow) in __out.chunks_mut(#span).enumerate() {
                    let __r = __first + __ci * #step_rows;
                    let __n = __orow.len();
                    #(#binds)*
                    for __j in 0..__n {
                        #lets
                        __orow[__j] = #root_expr;
                    }
                }
            }
        }
    }
}

/// [`rows_kernel`] for a fresh result: the block arrives write-only
/// (the runtime's `compiled::OutBlock`) and each element is stored once.
fn rows_writer_kernel(
    kname: &Ident,
    et: &TokenStream,
    params: &[TokenStream],
    row_bind: &[TokenStream],
    lets: &TokenStream,
    root_expr: &TokenStream,
) -> TokenStream {
    quote! {
        ::grafo::__private::multiversion! {
            fn #kname(__first: usize, __out: ::grafo::__private::compiled::OutBlock<'_, #et>, __row: usize #(, #params)*) {
                __out.write_rows(__row, #[inline(always)] |__ri: usize| {
                    let __r = __first + __ri;
                    let __n = __row;
                    #(#row_bind)*
                    #[inline(always)] move |__j: usize| -> #et {
                        #lets
                        #root_expr
                    }
                });
            }
        }
    }
}

/// Where a value's buffer comes from (see [`Emitter::buffer_source`]).
enum BufferSource {
    /// The buffer of the input it overwrites, moved.
    InPlace(Ident),
    /// A slot of the buffer plan.
    Slot(usize),
    /// A new buffer.
    Fresh,
}

#[derive(Default)]
struct LoopLeaves {
    /// The leaves read as slices indexed by the element (`__l0[__j]`).
    slices: Vec<Ident>,
    params: Vec<TokenStream>,
    args: Vec<TokenStream>,
    row_bind: Vec<TokenStream>,
    pre: Vec<TokenStream>,
    reads: HashMap<NodeId, TokenStream>,
    /// The class of each leaf read as a slice (row loops only), by parameter name.
    classes: Vec<(Ident, LeafClass)>,
}

/// A `grafo::__private::pool::Pool2d` value.
pub fn pool_tokens(
    kind: PoolKind,
    ksize: [usize; 2],
    strides: [usize; 2],
    padding: Padding,
) -> TokenStream {
    let kind = match kind {
        PoolKind::Max => quote!(::grafo::__private::pool::PoolKind::Max),
        PoolKind::Avg => quote!(::grafo::__private::pool::PoolKind::Avg),
    };
    let pad = match padding {
        Padding::Same => quote!(::grafo::__private::conv::Padding::Same),
        Padding::Valid => quote!(::grafo::__private::conv::Padding::Valid),
    };
    let ([kh, kw], [sh, sw]) = (ksize, strides);
    quote!(::grafo::__private::pool::Pool2d { kind: #kind, ksize: [#kh, #kw], strides: [#sh, #sw], padding: #pad })
}

/// The local holding the partial sums a convolution records for the reduction `r`.
fn lanes_ident(r: NodeId) -> Ident {
    format_ident!("__lanes_{}", r.0)
}
