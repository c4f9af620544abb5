//! Emits the eager form of a selection or assembly node: one call of `grafo::eager`'s
//! function for it (the same kernels as the compiled path), checked against the shape the
//! graph was compiled for.

use crate::emit::compiled::selection::axis_slice;
use crate::emit::{elem_ty, shape_expr};
use crate::ir::*;
use proc_macro2::{Ident, TokenStream};
use quote::quote;

/// The value expression of selection node `n` whose inputs are the eager locals `ins`.
pub fn value(n: &Node, ins: &[Ident]) -> TokenStream {
    let Op::Sel(op) = &n.op else {
        unreachable!("selection node")
    };
    let ev = quote!(::grafo::eager);
    let view = |k: usize| {
        let x = &ins[k];
        quote!(#x.view())
    };
    let scalar = |k: usize| {
        let x = &ins[k];
        quote!(::grafo::__private::compiled::eager_scalar(&#x.view())?)
    };
    let et = elem_ty(n.dtype);
    match op {
        SelOp::Slice { name, axes } => {
            let specs: Vec<TokenStream> = axes.iter().map(|s| axis_slice(s, scalar)).collect();
            let x = view(0);
            let out_sh = shape_expr(&n.shape);
            quote!(#ev::slice_as(#name, #x, &[#(#specs),*], &#out_sh)?)
        }
        SelOp::Concat { axis, .. } => {
            let parts: Vec<TokenStream> = (0..ins.len()).map(view).collect();
            let axis = *axis as isize;
            quote!(#ev::concat::<#et>(&[#(#parts),*], #axis)?)
        }
        SelOp::Tile { multiples } => {
            let m = multiples.iter().map(|&k| k as usize);
            let x = view(0);
            quote!(#ev::tile(#x, &[#(#m),*])?)
        }
        SelOp::Pad { paddings } => {
            let p = paddings.iter().map(|&(b, a)| {
                let (b, a) = (b as usize, a as usize);
                quote!([#b, #a])
            });
            let (x, value) = (view(0), scalar(1));
            quote!(#ev::pad(#x, &[#(#p),*], #value)?)
        }
        SelOp::Gather { axis } => {
            let (x, ind) = (view(0), view(1));
            let axis = *axis as isize;
            quote!(#ev::gather(#x, #ind, #axis)?)
        }
        SelOp::GatherGrad { axis } => {
            let (g, ind) = (view(0), view(1));
            let axis = *axis as isize;
            let sh = shape_expr(&n.shape);
            quote!(#ev::gather_grad(#g, #ind, &#sh, #axis)?)
        }
        SelOp::OneHot { depth } => {
            let depth = *depth as usize;
            let (ind, on, off) = (view(0), scalar(1), scalar(2));
            quote!(#ev::one_hot(#ind, #depth, #on, #off)?)
        }
        SelOp::ArgReduce { axis, min } => {
            let x = view(0);
            let axis = *axis as isize;
            if *min {
                quote!(#ev::argmin(#x, #axis)?)
            } else {
                quote!(#ev::argmax(#x, #axis)?)
            }
        }
        SelOp::Range { start, delta } => {
            let (s, d) = (
                crate::emit::compiled::literal(*start, n.dtype),
                crate::emit::compiled::literal(*delta, n.dtype),
            );
            let len = crate::emit::dim_expr(&n.shape[0]);
            quote!(#ev::range_n::<#et>(#s, #d, #len)?)
        }
        SelOp::Values { values } => {
            let vals = values
                .iter()
                .map(|&x| crate::emit::compiled::literal(x, n.dtype));
            let sh = shape_expr(&n.shape);
            quote!(#ev::constant_array::<#et>(&#sh, &[#(#vals),*])?)
        }
        SelOp::Cumulative {
            axis,
            exclusive,
            reverse,
            prod,
        } => {
            let x = view(0);
            let axis = *axis as isize;
            let f = if *prod {
                quote!(cumprod)
            } else {
                quote!(cumsum)
            };
            quote!(#ev::#f(#x, #axis, #exclusive, #reverse)?)
        }
        SelOp::TopK { k } => {
            let (x, k) = (view(0), *k as usize);
            quote!(#ev::top_k_indices(#x, #k)?)
        }
        SelOp::TakeAlongLast => {
            let (x, ind) = (view(0), view(1));
            quote!(#ev::take_along_last_axis(#x, #ind)?)
        }
        SelOp::ScatterAlongLast => {
            let (g, ind) = (view(0), view(1));
            let sh = shape_expr(&n.shape);
            quote!(#ev::scatter_along_last_axis(#g, #ind, &#sh)?)
        }
        SelOp::Resize { method } => {
            let x = view(0);
            let r = n.shape.len();
            let h = crate::emit::dim_expr(&n.shape[r - 3]);
            let w = crate::emit::dim_expr(&n.shape[r - 2]);
            match method {
                ResizeMethod::Nearest => quote!(#ev::resize_nearest(#x, [#h, #w])?),
                ResizeMethod::Bilinear => quote!(#ev::resize_bilinear::<_, #et>(#x, [#h, #w])?),
            }
        }
        SelOp::ResizeGrad { method } => {
            let g = view(0);
            let sh = shape_expr(&n.shape);
            let m = match method {
                ResizeMethod::Nearest => quote!(Nearest),
                ResizeMethod::Bilinear => quote!(Bilinear),
            };
            quote!(#ev::resize_grad(#g, &#sh, ::grafo::__private::kernels::resize::ResizeMethod::#m)?)
        }
    }
}
