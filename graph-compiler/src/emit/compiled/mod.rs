//! Emits the compiled body: straight-line Rust, one kernel call per fused group in the fixed schedule, buffers from the static plan.
//!
//! A fused loop is rendered from fusion's [`LoopPlan`] for its group (iteration shape, row
//! split, flatness, each leaf's [`LeafClass`], the per-element ops in order): this module
//! decides how the code looks (kernels, parallel drivers, buffers, in-place writes, row
//! fusion of consecutive loops over the same rows), never which values a loop reads or how.

use crate::emit::{dim_value, elem_ty, format_ident, quote, shape_expr};
use crate::fuse::{Group, GroupKind, Plan};
use crate::ir::*;
use crate::schedule::Schedule;
use linalg::pool_tokens;
use proc_macro2::{Ident, TokenStream};
use std::collections::HashMap;

mod buffers;
mod control;
mod elementwise;
mod grad;
mod linalg;
mod loops;
mod reduce;
mod regions;
mod rows;
mod scalar;
pub mod selection;
mod shared;
mod writeback;

pub use scalar::{literal, scalar_op};
pub use shared::share_kernels;

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
    /// A `&mut [T]` into an in-place parameter's memory (its new value, written there by its
    /// loop: `writeback.rs`).
    Param,
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

/// `closure` passed to a runtime driver as `&dyn Fn` of `sig` (and `Sync`): the driver (its
/// rayon plumbing, the GEMM's parallel loops) is then compiled once per element type in the
/// user's crate rather than once per call site, each closure being a type of its own. The
/// closure is called once per block of work, never per element.
fn as_dyn(closure: TokenStream, sig: TokenStream) -> TokenStream {
    quote!((&(#closure) as &(dyn #sig + ::std::marker::Sync)))
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

    /// The body of `__compiled`: parameters to slices, the schedule, the results, the
    /// in-place parameters' new values.
    ///
    /// Everything that can fail runs before the first write into a caller's array: the
    /// groups, then the copies the results and the parameters' new values take, then the
    /// loops that write parameters in place (`writeback.rs`) and the copies into the others;
    /// the results are assembled last.
    pub fn body(&mut self, params: &[Param]) -> TokenStream {
        let mut out = TokenStream::new();
        for (i, p) in params.iter().enumerate() {
            let Param::Tensor(t) = p else { continue };
            if self.writes_in_place(i) {
                out.extend(self.in_place_entry(i, t));
                continue;
            }
            let Some(id) = self.input_of(i) else {
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
                let view = match t.in_place {
                    true => quote!(&#name.view()),
                    false => quote!(&#name),
                };
                out.extend(quote!(let #vid: #et = ::grafo::__private::compiled::scalar_of(#view);));
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
        // The loops that write parameters in place come last in the main schedule.
        let mut last = Vec::new();
        match self.sched.fork.clone() {
            Some(fork) => out.extend(self.forked(&fork)),
            None => {
                let mut ids = self
                    .sched
                    .region_groups
                    .get(&Region::Main)
                    .cloned()
                    .unwrap_or_default();
                let first = ids
                    .iter()
                    .position(|&g| self.plan.into_param[self.plan.groups[g].root.0].is_some())
                    .unwrap_or(ids.len());
                last = ids.split_off(first);
                out.extend(self.run_groups(&ids));
            }
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
        // from the buffer another result takes), and before any parameter is written.
        let (hoisted, results) = copies_first(results, "__result");
        out.extend(hoisted);
        out.extend(self.writebacks(params, &last));
        let results = results
            .iter()
            .map(|(dv, data)| quote!(::grafo::__private::compiled::into_array(#dv, #data)?));
        out.extend(quote!(let __results = (#(#results,)*);));
        out
    }

    /// The `Input` node of parameter `param`.
    fn input_of(&self, param: usize) -> Option<NodeId> {
        self.graph
            .nodes
            .iter()
            .position(|n| n.op == Op::Input { param })
            .map(NodeId)
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
            GroupKind::Grad => self.grad(g),
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
                    // Its one element, in a buffer of the plan.
                    let e = self.scalar_value(input);
                    let alloc = self.alloc(g.root);
                    quote!(#alloc #vid[0] = #e;)
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
}
