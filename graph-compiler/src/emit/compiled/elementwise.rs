//! An elementwise group: its fused loop as a kernel, called by the parallel row or flat driver.

use super::loops::{rows_kernel, rows_writer_kernel, LoopLeaves};
use super::{as_dyn, v, Emitter, Store};
use crate::emit::{elem_ty, len_expr, quote};
use crate::fuse::Group;
use crate::ir::Op;
use proc_macro2::TokenStream;

impl<'a> Emitter<'a> {
    pub(super) fn elementwise(&mut self, g: &Group) -> TokenStream {
        let root = g.root;
        let n = self.node(root).clone();
        let et = elem_ty(n.dtype);
        let lp = self.loop_plan(g);
        let flat = lp.flat;
        // An in-place parameter's new value is written into the parameter, which the loop
        // then reads from its output (fusion's `into_param`).
        let param = self.plan.into_param[root.0];
        // Written in place over a dead input: that input is read from the output itself.
        let in_place = match param {
            Some(p) => lp
                .leaves
                .iter()
                .map(|&(l, _)| l)
                .find(|&l| self.node(l).op == Op::Input { param: p }),
            None => self.sched.in_place[root.0].filter(|&l| {
                self.store.get(&l) == Some(&Store::Owned)
                    && !self.moved.contains(&l)
                    && self.may_move(l)
            }),
        };
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
        let fresh = in_place.is_none() && param.is_none();
        let op = n.op.name();
        let len = len_expr(&n.shape);
        let cost = self.cost(g);
        let block_fn = quote!(Fn(usize, ::grafo::__private::compiled::OutBlock<'_, #et>));
        let chunk_fn = quote!(Fn(usize, &mut [#et]));
        let make = |unit: TokenStream, work: TokenStream, kernel: TokenStream| match self.sched.slot
            [root.0]
        {
            Some(s) => quote!(__ctx.take_written::<#et, _>(#s, #len, #op, #unit, #work, #kernel)?),
            None => {
                quote!(::grafo::__private::compiled::fresh_by_blocks::<#et, _>(#op, #len, #unit, #work, #kernel)?)
            }
        };
        let vid = v(root);
        let alloc = if let Some(p) = param {
            self.in_place_target(root, p)
        } else if fresh {
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
                    as_dyn(
                        quote!(|__first: usize, __chunk: ::grafo::__private::compiled::OutBlock<'_, #et>| #kname(__first, __chunk #(, #args)*)),
                        block_fn.clone(),
                    ),
                );
                quote!(let mut #vid: ::std::vec::Vec<#et> = #made;)
            } else {
                let body = as_dyn(
                    quote!(|__first: usize, __chunk: &mut [#et]| #kname(__first, __chunk #(, #args)*)),
                    chunk_fn.clone(),
                );
                quote!(::grafo::__private::parallel::for_each_chunk(&mut #vid[..], 1, #cost, #body);)
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
            let row = crate::emit::dim_expr(&lp.shape[lp.split]);
            let kernel = if fresh {
                rows_writer_kernel(&kname, &et, &params, &row_bind, &lets, &root_expr)
            } else {
                rows_kernel(&kname, &et, &params, &row_bind, &lets, &root_expr)
            };
            let run = if fresh {
                let made = make(
                    quote!(__row),
                    quote!(__row * #cost),
                    as_dyn(
                        quote!(|__first: usize, __chunk: ::grafo::__private::compiled::OutBlock<'_, #et>| #kname(__first, __chunk, __row #(, #args)*)),
                        block_fn,
                    ),
                );
                quote! {
                    let __row: usize = #row;
                    let mut #vid: ::std::vec::Vec<#et> = #made;
                }
            } else {
                let body = as_dyn(
                    quote!(|__first: usize, __chunk: &mut [#et]| #kname(__first, __chunk, __row #(, #args)*)),
                    chunk_fn,
                );
                quote! {
                    if #len > 0 {
                        let __row: usize = #row;
                        ::grafo::__private::parallel::for_each_chunk(&mut #vid[..], __row, __row * #cost, #body);
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
}
