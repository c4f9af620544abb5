//! The pieces every fused loop is built from: its leaves as kernel parameters and reads, the `let`s of its fused tree (with shared row-invariant divisors), and the row kernels.

use super::scalar::scalar_op;
use super::Emitter;
use crate::emit::{elem_ty, format_ident, quote, shape_expr};
use crate::fuse::{LeafClass, LoopPlan};
use crate::ir::*;
use proc_macro2::{Ident, TokenStream};
use std::collections::{HashMap, HashSet};

/// A fused element tree split for division by row-invariant divisors
/// ([`Emitter::shared_division_tree`]).
pub(super) struct SharedDivisionTree {
    /// `let`s computed once a row, the `SharedDivisor`s among them.
    pub(super) hoisted: TokenStream,
    /// The element's `let`s with every division by `/`.
    pub(super) exact: TokenStream,
    /// The element's `let`s dividing through the `SharedDivisor`s, each with a range check.
    pub(super) fast: TokenStream,
    /// Whether every divisor admits the fast path.
    pub(super) fast_cond: TokenStream,
    /// The element's range checks folded by `max`.
    pub(super) check: TokenStream,
    /// The element type of the shared divisions.
    pub(super) div_ty: TokenStream,
    /// The root's expression (the same name in both variants).
    pub(super) root: TokenStream,
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

impl<'a> Emitter<'a> {
    /// A rank-0 elementwise expression over scalar locals.
    pub(super) fn tree_scalar(&self, id: NodeId) -> TokenStream {
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
    pub(super) fn leaves(&self, lp: &LoopPlan, skip: Option<NodeId>) -> LoopLeaves {
        let mut leaves = lp.leaves.clone();
        if let Some(s) = skip {
            leaves.retain(|&(l, _)| l != s);
        }
        // The kernel's parameters in the order its ops first read them (not by node id), so
        // that the same loop at another step of an unrolled loop, whose leaves have other
        // ids, is the same kernel (`shared.rs` emits it once).
        let first_read = |l: NodeId| {
            lp.ops
                .iter()
                .enumerate()
                .find_map(|(k, &op)| {
                    let inputs = &self.node(op).inputs;
                    inputs.iter().position(|&i| i == l).map(|p| (k, p))
                })
                .unwrap_or((usize::MAX, usize::MAX))
        };
        leaves.sort_by_key(|&(l, _)| first_read(l));
        self.leaves_of(&leaves, &lp.shape, lp.split, lp.flat)
    }

    /// Loop parameters and reads for the given leaves (see [`Emitter::leaves`]).
    pub(super) fn leaves_of(
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
    pub(super) fn tree_lets(
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
    pub(super) fn shared_division_tree(
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
}

/// A fused loop over whole rows of `__out` (`__row` elements each): the elementwise groups'
/// kernel, and the epilogue that matmul and conv2d run on each output block.
pub(super) fn rows_kernel(
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
pub(super) const MULTI_ROW_MAX: usize = 64;

/// Elements one step of [`multi_rows_kernel`] covers (whole rows, at least one).
const MULTI_ROW_SPAN: usize = 256;

/// [`rows_kernel`] for short rows of a static length `n` whose leaves are full-shape or
/// broadcast rows: each loop step covers `MULTI_ROW_SPAN / n` whole rows, the broadcast rows
/// tiled across them once per call. With conv2d's 16 channels the per-row loop spent more on
/// its own bookkeeping (two 8-lane iterations a row) than on the adds; the arithmetic of
/// every element is unchanged.
pub(super) fn multi_rows_kernel(
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
pub(super) fn rows_writer_kernel(
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

#[derive(Default)]
pub(super) struct LoopLeaves {
    /// The leaves read as slices indexed by the element (`__l0[__j]`).
    pub(super) slices: Vec<Ident>,
    pub(super) params: Vec<TokenStream>,
    pub(super) args: Vec<TokenStream>,
    pub(super) row_bind: Vec<TokenStream>,
    pub(super) pre: Vec<TokenStream>,
    pub(super) reads: HashMap<NodeId, TokenStream>,
    /// The class of each leaf read as a slice (row loops only), by parameter name.
    pub(super) classes: Vec<(Ident, LeafClass)>,
}
