//! Emits the selection and assembly groups of the compiled body: one call of the runtime's
//! `selection` kernels per node, writing the plan's output buffer (a rank-0 result goes to a
//! scalar local); the kernels return `Err` for run-time indices or symbolic sizes out of range.

use super::{literal, v, Emitter, Store};
use crate::emit::{dim_expr, elem_ty, shape_expr};
use crate::fuse::Group;
use crate::ir::*;
use proc_macro2::TokenStream;
use quote::quote;

/// The runtime's `AxisSlice` for one axis; `index_of(k)` is the run-time index of input `k`.
pub fn axis_slice(spec: &SliceSpec, index_of: impl Fn(usize) -> TokenStream) -> TokenStream {
    let sel = quote!(::grafo::__private::selection::AxisSlice);
    match *spec {
        SliceSpec::Index(i) => quote!(#sel::Index(#i)),
        SliceSpec::IndexInput(k) => {
            let e = index_of(k);
            quote!(#sel::Index((#e) as i64))
        }
        SliceSpec::Range { start, end, step } => {
            let end = match end {
                Some(e) => quote!(::std::option::Option::Some(#e)),
                None => quote!(::std::option::Option::None),
            };
            quote!(#sel::Range { start: #start, end: #end, step: #step })
        }
        SliceSpec::Strided { begin, end, stride } => {
            quote!(#sel::Strided { begin: #begin, end: #end, stride: #stride })
        }
    }
}

impl Emitter<'_> {
    /// A `&[T]` of a materialised value, or of a one-element array for a rank-0 one.
    fn operand_slice(&self, id: NodeId) -> TokenStream {
        let n = self.node(id);
        if n.shape.is_empty()
            || !self.plan.materialised[id.0]
            || self.store.get(&id) == Some(&Store::Scalar)
        {
            let e = self.scalar_value(id);
            quote!(&[#e][..])
        } else {
            self.slice(id)
        }
    }

    /// The call of one selection kernel writing `out` (a `&mut [T]` expression).
    fn selection_call(&self, n: &Node, out: TokenStream) -> TokenStream {
        let Op::Sel(op) = &n.op else {
            unreachable!("selection group")
        };
        let sel = quote!(::grafo::__private::selection);
        let input = |k: usize| self.operand_slice(n.inputs[k]);
        let in_shape = |k: usize| shape_expr(&self.node(n.inputs[k]).shape);
        match op {
            SelOp::Slice { name, axes } => {
                let specs: Vec<TokenStream> = axes
                    .iter()
                    .map(|s| axis_slice(s, |k| self.scalar_value(n.inputs[k])))
                    .collect();
                let (x, sh, out_sh) = (input(0), in_shape(0), shape_expr(&n.shape));
                quote!(#sel::slice_into(#name, #x, &#sh, &[#(#specs),*], &#out_sh, #out)?;)
            }
            SelOp::Concat { name, axis } => {
                let parts: Vec<TokenStream> = (0..n.inputs.len())
                    .map(|k| {
                        let (x, sh) = (input(k), in_shape(k));
                        quote!((#x, &#sh[..]))
                    })
                    .collect();
                quote!(#sel::concat_into(#name, &[#(#parts),*], #axis, #out)?;)
            }
            SelOp::Tile { multiples } => {
                let m = multiples.iter().map(|&k| k as usize);
                let (x, sh) = (input(0), in_shape(0));
                quote!(#sel::tile_into(#x, &#sh, &[#(#m),*], #out)?;)
            }
            SelOp::Pad { paddings } => {
                let p = paddings.iter().map(|&(b, a)| {
                    let (b, a) = (b as usize, a as usize);
                    quote!((#b, #a))
                });
                let (x, sh) = (input(0), in_shape(0));
                let value = self.scalar_value(n.inputs[1]);
                quote!(#sel::pad_into(#x, &#sh, &[#(#p),*], #value, #out)?;)
            }
            SelOp::Gather { axis } => {
                let (x, sh, ind) = (input(0), in_shape(0), input(1));
                quote!(#sel::gather_into(#x, &#sh, #ind, #axis, #out)?;)
            }
            SelOp::GatherGrad { axis } => {
                let (g, ind, sh) = (input(0), input(1), shape_expr(&n.shape));
                quote!(::grafo::__private::scatter::scatter_add_into(#g, #ind, &#sh, #axis, #out)?;)
            }
            SelOp::OneHot { depth } => {
                let depth = *depth as usize;
                let ind = input(0);
                let (on, off) = (
                    self.scalar_value(n.inputs[1]),
                    self.scalar_value(n.inputs[2]),
                );
                quote!(#sel::one_hot_into(#ind, #depth, #on, #off, #out)?;)
            }
            SelOp::ArgReduce { axis, min } => {
                let (x, sh) = (input(0), in_shape(0));
                quote!(#sel::arg_reduce_into(#x, &#sh, #axis, #min, #out)?;)
            }
            SelOp::Range { start, delta } => {
                let (s, d) = (literal(*start, n.dtype), literal(*delta, n.dtype));
                quote!(#sel::range_into(#s, #d, #out);)
            }
            SelOp::Values { values } => {
                let vals = values.iter().map(|&x| literal(x, n.dtype));
                quote!(#sel::values_into(&[#(#vals),*], #out);)
            }
            SelOp::Cumulative {
                axis,
                exclusive,
                reverse,
                prod,
            } => {
                let scan = quote!(::grafo::__private::kernels::scan);
                let kind = if *prod { quote!(Prod) } else { quote!(Sum) };
                let (x, sh) = (input(0), in_shape(0));
                quote!(#scan::cumulative_into(#x, &#sh, #axis, #scan::ScanKind::#kind, #exclusive, #reverse, #out)?;)
            }
            SelOp::TopK { k } => {
                let k = *k as usize;
                let (x, sh) = (input(0), in_shape(0));
                quote!(::grafo::__private::kernels::top_k::top_k_into(#x, &#sh, #k, #out)?;)
            }
            SelOp::TakeAlongLast => {
                let (x, sh, ind) = (input(0), in_shape(0), input(1));
                quote!(::grafo::__private::kernels::top_k::take_along_last_into(#x, &#sh, #ind, #out)?;)
            }
            SelOp::ScatterAlongLast => {
                let (g, ind, sh) = (input(0), input(1), shape_expr(&n.shape));
                quote!(::grafo::__private::kernels::top_k::scatter_along_last_into(#g, #ind, &#sh, #out)?;)
            }
            SelOp::Resize { method } => {
                let resize = quote!(::grafo::__private::kernels::resize);
                let (x, sh) = (input(0), in_shape(0));
                let r = n.shape.len();
                let (h, w) = (dim_expr(&n.shape[r - 3]), dim_expr(&n.shape[r - 2]));
                match method {
                    ResizeMethod::Nearest => {
                        quote!(#resize::resize_nearest_into(#x, &#sh, [#h, #w], #out)?;)
                    }
                    ResizeMethod::Bilinear => {
                        quote!(#resize::resize_bilinear_into(#x, &#sh, [#h, #w], #out)?;)
                    }
                }
            }
            SelOp::ResizeGrad { method } => {
                let resize = quote!(::grafo::__private::kernels::resize);
                let (g, g_sh, sh) = (input(0), in_shape(0), shape_expr(&n.shape));
                let f = match method {
                    ResizeMethod::Nearest => quote!(resize_nearest_grad_into),
                    ResizeMethod::Bilinear => quote!(resize_bilinear_grad_into),
                };
                quote!(#resize::#f(#g, &#g_sh, &#sh, #out)?;)
            }
        }
    }

    /// One selection group: its kernel call into a fresh or slot buffer (or a scalar local).
    pub(super) fn selection(&mut self, g: &Group) -> TokenStream {
        let n = self.node(g.root).clone();
        let vid = v(g.root);
        let et = elem_ty(n.dtype);
        if n.shape.is_empty() {
            let call = self.selection_call(&n, quote!(&mut __one[..]));
            self.store.insert(g.root, Store::Scalar);
            return quote! {
                let #vid: #et = {
                    let mut __one: [#et; 1] = [<#et as ::std::default::Default>::default()];
                    #call
                    __one[0]
                };
            };
        }
        let call = self.selection_call(&n, quote!(&mut #vid[..]));
        let alloc = self.alloc(g.root);
        quote! {
            #alloc
            #call
        }
    }
}
