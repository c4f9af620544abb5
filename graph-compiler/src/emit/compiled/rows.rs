//! Row fusion: consecutive loops over the same rows emitted as one parallel loop that computes every group row by row.

use super::loops::{LoopLeaves, SharedDivisionTree};
use super::{v, Emitter, Store};
use crate::emit::{elem_ty, format_ident, len_expr, quote};
use crate::fuse::{Group, GroupKind, LeafClass, LoopKind, LoopPlan};
use crate::ir::*;
use proc_macro2::{Ident, TokenStream};
use std::collections::HashSet;

impl<'a> Emitter<'a> {
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
                if !lp.shape.is_empty()
                    && self.sched.in_place[root.0].is_none()
                    && self.plan.into_param[root.0].is_none() =>
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
    pub(super) fn loop_plan(&self, g: &Group) -> LoopPlan {
        self.plan.loops[g.id].clone().expect(
            "fusion plans a loop for every elementwise, fusable reduction and epilogue group",
        )
    }

    /// The longest run of groups at the start of `ids` that can share one loop over rows:
    /// same rows, and every value one of them makes that a later one reads is read from the
    /// same row (a row statistic, or the row just written). W4's mean, variance and
    /// normalisation become one pass over memory; each row's data stays in L1 between them.
    pub(super) fn row_chain(&self, ids: &[usize]) -> Vec<usize> {
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
            // The chain takes every output buffer before its loop and frees what its groups
            // last read after it: an output may not take the slot of a value freed inside
            // the chain, which the buffer plan, group by group, let it reuse.
            let freed_inside = chain
                .iter()
                .flat_map(|&c| &self.sched.frees_after[c])
                .any(|f| {
                    self.sched.slot[f.0].is_some()
                        && self.sched.slot[f.0] == self.sched.slot[self.plan.groups[gid].root.0]
                });
            if freed_inside {
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
    pub(super) fn row_fused(&mut self, chain: &[usize]) -> TokenStream {
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
                        // Through a `&dyn Fn`: rayon's plumbing is compiled once per
                        // tuple of output types, not once per chain.
                        ::grafo::__private::parallel::for_each_indexed(
                            (#(#blocks,)*).into_par_iter(),
                            &|__i: usize, (#(#chunk_names,)*)| {
                                let __nrows = #first_chunk.len() / #first_per_row;
                                #(#init_blocks)*
                                #kname(__i * __block, __nrows, __n, #(#chunk_names,)* #(#args),*)
                            },
                        );
                    }
                }
            }
            #finish_outs
            __ctx.record(#gid0, #label, __t);
        }
    }
}
