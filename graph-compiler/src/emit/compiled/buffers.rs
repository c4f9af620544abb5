//! Buffers of the compiled body: where a value's buffer comes from (a plan slot, an input overwritten in place, a fresh one), its frees, and reading a value as a slice, a scalar or an owned copy.

use super::scalar::scalar_op;
use super::{v, Emitter, Store};
use crate::emit::{elem_ty, format_ident, len_expr, quote};
use crate::ir::*;
use proc_macro2::{Ident, TokenStream};

impl<'a> Emitter<'a> {
    /// The value `o` as an owned `Vec<T>` (moving it when it is an owned buffer not yet moved).
    pub(super) fn owned_copy(&mut self, o: NodeId) -> TokenStream {
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
            Some(Store::Owned)
            | Some(Store::Slice)
            | Some(Store::Alias(_))
            | Some(Store::Param) => {
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
    pub(super) fn slice(&self, id: NodeId) -> TokenStream {
        let vid = v(id);
        match self.store.get(&id) {
            Some(Store::Slice) => quote!(#vid),
            Some(Store::Alias(r)) => self.slice(*r),
            _ => quote!(&#vid[..]),
        }
    }

    /// A scalar expression for a rank-0 value (a local, or an inlined constant).
    pub(super) fn scalar_value(&self, id: NodeId) -> TokenStream {
        match self.store.get(&id) {
            Some(Store::Scalar) => {
                let vid = v(id);
                quote!(#vid)
            }
            Some(Store::Owned)
            | Some(Store::Slice)
            | Some(Store::Alias(_))
            | Some(Store::Param) => {
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

    /// The frees the buffer plan puts after group `gid`.
    pub(super) fn frees(&mut self, gid: usize) -> TokenStream {
        let sched = self.sched;
        self.free_values(&sched.frees_after[gid])
    }

    /// Gives the buffers of `values` back to their slots (a cond's result to the slot of the
    /// arm value moved into it), skipping those moved or not owned.
    pub(super) fn free_values(&mut self, values: &[NodeId]) -> TokenStream {
        let mut out = TokenStream::new();
        for &f in values {
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
    pub(super) fn alloc(&mut self, id: NodeId) -> TokenStream {
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
    pub(super) fn alloc_written(&mut self, id: NodeId, body: TokenStream) -> TokenStream {
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
}

/// The size in bytes of one element of `dtype`.
pub(super) fn elem_bytes(dtype: DType) -> u64 {
    match dtype {
        DType::F64 | DType::I64 => 8,
        DType::F32 | DType::I32 => 4,
        DType::Bool => 1,
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
