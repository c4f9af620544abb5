use grafo::prelude::*;

#[graph]
mod net {
    const D: usize = 10;

    pub struct Net {
        // One dim for a layer of two.
        pub fc: Dense<4>,
        // Ten features do not split into three heads.
        pub attn: MultiHeadAttention<D, 3>,
        // An integer layer.
        pub norm: LayerNorm<4, i32>,
        // A dim that is no constant.
        pub emb: Embedding<V, 4>,
    }

    pub fn f(x: Tensor<f32, B, 4>, p: Net) -> Tensor<f32, B, 4> {
        x
    }

    // A parameter of a layer type with wrong arguments.
    pub fn g(x: Tensor<f32, B, 4>, fc: Conv2d<3, 3, 1>) -> Tensor<f32, B, 4> {
        x
    }

    // A literal of a layer whose dims its fields do not all hold.
    pub fn h(p: MultiHeadAttention<4, 2>) -> MultiHeadAttention<4, 2> {
        MultiHeadAttention { query: p.key, key: p.key, value: p.value, output: p.output }
    }
}

fn main() {}
