//! Reduction groups: the reduction loop over rows or over the whole tensor, with its fused producer.

use super::linalg::lanes_ident;
use super::loops::LoopLeaves;
use super::scalar::numeric;
use super::{as_dyn, v, Emitter, Store};
use crate::emit::{elem_ty, format_ident, len_expr, quote, shape_expr};
use crate::fuse::{Group, LoopKind};
use crate::ir::*;
use proc_macro2::{Ident, TokenStream};
use std::collections::HashMap;

impl<'a> Emitter<'a> {
    pub(super) fn reduce(&mut self, g: &Group) -> TokenStream {
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
                ReduceKind::Prod => quote!(Prod),
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
                    {
                        let body = as_dyn(
                            quote!(|__range: ::std::ops::Range<usize>| #kname(__range.start, __range.end #(, #args)*)),
                            quote!(Fn(::std::ops::Range<usize>) -> #acc_t),
                        );
                        let combine = as_dyn(
                            quote!(|__a: #acc_t, __b: #acc_t| #combine_partials),
                            quote!(Fn(#acc_t, #acc_t) -> #acc_t),
                        );
                        quote!(::grafo::__private::reduce::segments(#in_len, #body, #combine))
                    },
                )
            } else {
                let row = crate::emit::dim_expr(&in_shape[in_shape.len() - 1]);
                let body = as_dyn(
                    quote!(|__range: ::std::ops::Range<usize>| #kname(__range.start, __range.end, __row #(, #args)*)),
                    quote!(Fn(::std::ops::Range<usize>) -> #acc_t),
                );
                let combine = as_dyn(
                    quote!(|__a: #acc_t, __b: #acc_t| #combine_partials),
                    quote!(Fn(#acc_t, #acc_t) -> #acc_t),
                );
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
                        ::grafo::__private::parallel::map_reduce(__rows, __row * #cost, #body, #combine)
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
        let body = as_dyn(
            quote!(|__first: usize, __chunk: &mut [#et]| #kname(__first, __chunk, __row #(, #args)*)),
            quote!(Fn(usize, &mut [#et])),
        );
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
            ::grafo::__private::parallel::for_each_chunk(&mut #vid[..], 1, __row * #cost + 1, #body);
        }
    }

    /// The loop of a reduction over `__n` elements (the leaves read through `reads`, the slice
    /// leaves re-sliced per chunk), leaving its accumulator in `__total`; with the
    /// accumulator's type and identity, how two partial results combine, and how a total
    /// over a count finishes (mean, norm).
    pub(super) fn reduction_code(
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
            ReduceKind::Prod if dt.is_float() => (quote!(1.0), Box::new(|a, b| quote!(#a * #b))),
            ReduceKind::Prod => (
                quote!(1),
                Box::new(|a, b| quote!(::grafo::__private::Numeric::mul(#a, #b))),
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
            ReduceKind::Prod if dt.is_float() => quote!(1.0),
            ReduceKind::Prod => quote!(1),
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
}

/// The pieces of a reduction loop (see `Emitter::reduction_code`).
pub(super) struct ReductionCode {
    pub(super) accumulate: TokenStream,
    acc_t: TokenStream,
    init: TokenStream,
    combine_partials: TokenStream,
    pub(super) finish: Box<dyn Fn(TokenStream, TokenStream) -> TokenStream>,
}
