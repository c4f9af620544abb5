//! The gradient groups of the compiled body: a convolution's input or filter gradient, or a pooling's, as one call of the runtime's kernel (`conv_backprop`, `pool_grad`) writing the plan's output buffer.

use super::{v, Emitter};
use crate::emit::{padding_tokens, shape_expr};
use crate::fuse::Group;
use crate::ir::*;
use proc_macro2::TokenStream;
use quote::quote;

/// A `grafo::__private::conv_general::ConvGeneral` value.
fn conv_tokens(
    stride: usize,
    [dh, dw]: [usize; 2],
    padding: Padding,
    depthwise: bool,
) -> TokenStream {
    let pad = padding_tokens(padding);
    quote!(::grafo::__private::conv_general::ConvGeneral { stride: #stride, dilation: [#dh, #dw], padding: #pad, depthwise: #depthwise })
}

impl Emitter<'_> {
    /// One gradient kernel call into a fresh or slot buffer (every element of which the
    /// kernel writes).
    pub(super) fn grad(&mut self, g: &Group) -> TokenStream {
        let n = self.node(g.root).clone();
        let input = |k: usize| n.inputs[k];
        let shape_of = |e: &Self, id: NodeId| shape_expr(&e.node(id).shape);
        let vid = v(g.root);
        let call = match n.op {
            Op::Conv2dBackpropInput {
                stride,
                dilation,
                padding,
                depthwise,
            } => {
                let (dy, k) = (self.slice(input(0)), self.slice(input(1)));
                let (xs, ks) = (shape_expr(&n.shape), shape_of(self, input(1)));
                let conv = conv_tokens(stride, dilation, padding, depthwise);
                quote!(::grafo::__private::conv_backprop::conv2d_backprop_input_into(#dy, #k, #xs, #ks, #conv, &mut #vid[..]);)
            }
            Op::Conv2dBackpropFilter {
                stride,
                dilation,
                padding,
                depthwise,
            } => {
                let (x, dy) = (self.slice(input(0)), self.slice(input(1)));
                let (xs, ks) = (shape_of(self, input(0)), shape_expr(&n.shape));
                let conv = conv_tokens(stride, dilation, padding, depthwise);
                quote!(::grafo::__private::conv_backprop::conv2d_backprop_filter_into(#x, #dy, #xs, #ks, #conv, &mut #vid[..]);)
            }
            Op::PoolGrad {
                kind,
                ksize,
                strides,
                padding,
            } => {
                let dy = self.slice(input(0));
                let x = match kind {
                    PoolKind::Max => self.slice(input(1)),
                    PoolKind::Avg => quote!(&[][..]),
                };
                let xs = shape_expr(&n.shape);
                let pool = super::linalg::pool_tokens(kind, ksize, strides, padding);
                quote!(::grafo::__private::pool_grad::pool2d_grad_into(#x, #dy, #xs, #pool, &mut #vid[..]);)
            }
            _ => quote!(compile_error!("internal: gradient group without a gradient op");),
        };
        let alloc = self.alloc(g.root);
        quote! {
            #alloc
            #call
        }
    }
}
