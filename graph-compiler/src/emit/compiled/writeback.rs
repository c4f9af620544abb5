//! In-place parameters (`w: &mut Tensor<..>`): reading one at entry, and writing each new value into the caller's array at the end, either by the loop that computes it (fusion's `into_param`) or by a copy.
//!
//! A parameter whose new value's loop writes it in place is held as a runtime
//! `compiled::InPlace` (`__ip_<param>`): the body reads the parameter through it, and that
//! loop, which runs after everything that can fail, writes into its `target()`, the caller's
//! own elements (or, for a parameter not in standard layout, a staged copy that `finish()`
//! writes back). Every other new value is copied into its parameter with
//! `compiled::write_param` once every check has passed, and its buffer goes back to the plan.

use super::{v, Emitter, Store};
use crate::emit::{elem_ty, format_ident, quote};
use crate::ir::*;
use proc_macro2::{Ident, TokenStream};

/// The local holding in-place parameter `param` as a `compiled::InPlace`.
fn ip_ident(param: usize) -> Ident {
    format_ident!("__ip_{}", param)
}

impl<'a> Emitter<'a> {
    /// Whether the new value of parameter `param` is written into it by its own loop.
    pub(super) fn writes_in_place(&self, param: usize) -> bool {
        self.plan.into_param.contains(&Some(param))
    }

    /// Entry code of a parameter written in place: the `InPlace` (staging a parameter that is
    /// not in standard layout) and its current value as a slice.
    pub(super) fn in_place_entry(&mut self, param: usize, t: &TensorParam) -> TokenStream {
        let ip = ip_ident(param);
        let name = &t.name;
        let pname = name.to_string();
        let mut out =
            quote!(let mut #ip = ::grafo::__private::compiled::InPlace::new(#pname, &mut #name)?;);
        if let Some(id) = self.input_of(param).filter(|id| self.plan.live[id.0]) {
            let vid = v(id);
            let et = elem_ty(t.dtype);
            out.extend(quote!(let #vid: &[#et] = #ip.current();));
            self.store.insert(id, Store::Slice);
        }
        out
    }

    /// The output buffer of the loop computing the new value of `param`: the parameter itself.
    pub(super) fn in_place_target(&mut self, root: NodeId, param: usize) -> TokenStream {
        let ip = ip_ident(param);
        let vid = v(root);
        let et = elem_ty(self.node(root).dtype);
        self.store.insert(root, Store::Param);
        quote!(let #vid: &mut [#et] = #ip.target();)
    }

    /// The end of the body, after the results' copies: the new values that read an in-place
    /// parameter's memory copied first, then `last` (the loops writing parameters in place),
    /// the other new values copied into their parameters, and their buffers given back.
    pub(super) fn writebacks(&mut self, params: &[Param], last: &[usize]) -> TokenStream {
        let graph = self.graph;
        let in_place = |p: usize| matches!(&params[p], Param::Tensor(t) if t.in_place);
        let copied: Vec<(usize, NodeId)> = graph
            .writebacks
            .iter()
            .copied()
            .filter(|&(p, w)| self.plan.into_param[w.0] != Some(p))
            .filter(|&(p, w)| graph.node(w).op != Op::Input { param: p })
            .collect();
        let mut out = TokenStream::new();
        // A value read from a parameter that is about to be written (`w = m; m = w`) is
        // copied before any write.
        let mut sources = Vec::new();
        for (k, &(_, w)) in copied.iter().enumerate() {
            let et = elem_ty(graph.node(w).dtype);
            let source = if graph.param_read_by(w).is_some_and(in_place) {
                let local = format_ident!("__new_value_{}", k);
                let s = self.slice(w);
                out.extend(quote!(let #local: ::std::vec::Vec<#et> = ::grafo::__private::buffer::copied("in-place parameter", #s)?;));
                quote!(&#local[..])
            } else if graph.node(w).shape.is_empty() {
                let local = format_ident!("__new_value_{}", k);
                let e = self.scalar_value(w);
                out.extend(quote!(let #local: #et = #e;));
                quote!(::std::slice::from_ref(&#local))
            } else {
                self.slice(w)
            };
            sources.push(source);
        }
        out.extend(self.run_groups(last));
        // The views of the parameters copied into: nothing reads them any more.
        for (i, p) in params.iter().enumerate() {
            let Param::Tensor(t) = p else { continue };
            let Some(id) = self.input_of(i) else { continue };
            if t.in_place && !t.shape.is_empty() && !self.writes_in_place(i) && self.plan.live[id.0]
            {
                let cow = format_ident!("__cow_{}", id.0);
                out.extend(quote!(::std::mem::drop(#cow);));
            }
        }
        for (&(p, _), source) in copied.iter().zip(&sources) {
            let Param::Tensor(t) = &params[p] else {
                continue;
            };
            let name = &t.name;
            out.extend(quote!(::grafo::__private::compiled::write_param(&mut #name, #source);));
        }
        for (i, p) in params.iter().enumerate() {
            if matches!(p, Param::Tensor(_)) && self.writes_in_place(i) {
                let ip = ip_ident(i);
                out.extend(quote!(#ip.finish();));
            }
        }
        let values: Vec<NodeId> = copied.iter().map(|&(_, w)| w).collect();
        out.extend(self.free_values(&values));
        out
    }
}
