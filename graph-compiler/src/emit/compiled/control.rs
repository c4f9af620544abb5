//! Control groups: runtime asserts, and a cond with its two arms (only the taken arm runs).

use super::{v, Emitter, Store};
use crate::emit::{elem_ty, format_ident, len_expr, quote, shape_expr};
use crate::fuse::Group;
use crate::ir::*;
use proc_macro2::{Ident, TokenStream};

impl<'a> Emitter<'a> {
    pub(super) fn assert(&mut self, g: &Group) -> TokenStream {
        let n = self.node(g.root).clone();
        let Op::Assert { kind, message } = &n.op else {
            unreachable!("assert group")
        };
        let mut slices = Vec::new();
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
                    slices.push(quote!(::std::slice::from_ref(&#e)));
                    quote!(::grafo::__private::compiled::view_of(::std::slice::from_ref(&#e), &[])?)
                } else {
                    let s = self.slice(i);
                    slices.push(s.clone());
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
        let check = quote!(::grafo::eager::#f(#(#views,)* #last).map_err(|e| e.at_line(#line))?;);
        // A comparison of operands of one shape, or with a scalar, is checked in place
        // without the eager op's temporary (which then only builds the error).
        let compare = match kind {
            AssertKind::Less => Some(quote!(|a, b| a < b)),
            AssertKind::Greater => Some(quote!(|a, b| a > b)),
            _ => None,
        };
        let shapes: Vec<&Shape> = n.inputs.iter().map(|&i| &self.node(i).shape).collect();
        match (compare, &slices[..], &shapes[..]) {
            (Some(f), [x, y], [xs, ys]) if xs == ys || xs.is_empty() || ys.is_empty() => quote! {
                if !::grafo::__private::compiled::holds_everywhere(#x, #y, #f) {
                    #check
                }
            },
            _ => check,
        }
    }

    pub(super) fn cond(&mut self, g: &Group) -> TokenStream {
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
            // A value output twice moves at its last place only: the earlier ones copy it
            // first (the tuple is evaluated left to right).
            let dies = !outs[k + 1..].contains(&o)
                && (inside
                    || (self.sched.last_use[o.0] == Some(cond_group)
                        && !self.graph.outputs.contains(&o)));
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
