//! `matmul` and `conv2d` groups, with the fused elementwise tail (bias, activation, pooling, recorded reductions) applied to each output block.

use super::loops::{multi_rows_kernel, rows_kernel, LoopLeaves, MULTI_ROW_MAX};
use super::{as_dyn, v, Emitter};
use crate::emit::{elem_ty, format_ident, len_expr, padding_tokens, quote, shape_expr};
use crate::fuse::{Group, GroupKind, LeafClass};
use crate::ir::*;
use proc_macro2::{Ident, TokenStream};

impl<'a> Emitter<'a> {
    /// `matmul` / `conv2d`, with the fused elementwise tail applied to each output block.
    pub(super) fn linalg(&mut self, g: &Group) -> TokenStream {
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
            let row = crate::emit::dim_expr(&lp.shape[lp.split]);
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
                let d = |s: &[Dim], i: usize| crate::emit::dim_expr(&s[i]);
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
                    Some((kn, args)) => as_dyn(
                        quote!(|__batch: usize, __row0: usize, __block: &mut [#et]| if __row > 0 { #kn(__batch * __m + __row0, __block, __row #(, #args)*) }),
                        quote!(Fn(usize, usize, &mut [#et])),
                    ),
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
                let pad = padding_tokens(padding);
                let call_epi = match &epilogue {
                    Some((kn, args)) => as_dyn(
                        quote!(|__p0: usize, __block: &mut [#et]| if __row > 0 { #kn(__p0, __block, __row #(, #args)*) }),
                        quote!(Fn(usize, &mut [#et])),
                    ),
                    None => as_dyn(
                        quote!(|_: usize, _: &mut [#et]| {}),
                        quote!(Fn(usize, &mut [#et])),
                    ),
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
                            as_dyn(
                                quote!(|__e0: usize, __done: &[#et]| #lanes.record(__e0, __done)),
                                quote!(Fn(usize, &[#et])),
                            ),
                        )
                    }
                    None => (
                        TokenStream::new(),
                        as_dyn(quote!(|_: usize, _: &[#et]| {}), quote!(Fn(usize, &[#et]))),
                    ),
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
                let pad = padding_tokens(padding);
                let call_epi = match &epilogue {
                    Some((kn, args)) => as_dyn(
                        quote!(|__p0: usize, __block: &mut [#et]| if __row > 0 { #kn(__p0, __block, __row #(, #args)*) }),
                        quote!(Fn(usize, &mut [#et])),
                    ),
                    None => as_dyn(
                        quote!(|_: usize, _: &mut [#et]| {}),
                        quote!(Fn(usize, &mut [#et])),
                    ),
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
    let pad = padding_tokens(padding);
    let ([kh, kw], [sh, sw]) = (ksize, strides);
    quote!(::grafo::__private::pool::Pool2d { kind: #kind, ksize: [#kh, #kw], strides: [#sh, #sw], padding: #pad })
}

/// The local holding the partial sums a convolution records for the reduction `r`.
pub(super) fn lanes_ident(r: NodeId) -> Ident {
    format_ident!("__lanes_{}", r.0)
}
