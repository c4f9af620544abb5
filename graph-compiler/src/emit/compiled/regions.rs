//! Regions of the schedule: a region's groups in order with their frees, the size checks before it runs, and forked branches run side by side.

use super::buffers::elem_bytes;
use super::{copies_first, v, Emitter, Store};
use crate::emit::{elem_ty, format_ident, quote, shape_expr};
use crate::fuse::GroupKind;
use crate::ir::*;
use crate::schedule::Fork;
use proc_macro2::{Ident, TokenStream};

impl<'a> Emitter<'a> {
    /// Emits the groups of one region in schedule order (a cond arm's after its size checks).
    pub(super) fn region(&mut self, r: Region) -> TokenStream {
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
    pub(super) fn size_checks(&self, r: Region) -> TokenStream {
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
    pub(super) fn may_move(&self, v: NodeId) -> bool {
        !self.in_branch || !self.outside.contains(&v)
    }

    /// `prefix; (branch 0 || branch 1)`: the two branches as closures over their own child
    /// contexts, joined with rayon when the session has inter-op threads, else one after the other.
    pub(super) fn forked(&mut self, fork: &Fork) -> TokenStream {
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
    pub(super) fn run_groups(&mut self, ids: &[usize]) -> TokenStream {
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
}
