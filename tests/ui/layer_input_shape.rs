use grafo::prelude::*;

#[graph]
mod net {
    pub struct Net {
        pub fc: Dense<4, 3>,
        pub conv: Conv2d<3, 3, 1, 8>,
        pub cell: LstmCell<4, 6>,
        pub attn: MultiHeadAttention<8, 2>,
    }

    // The input has 5 features; the layer takes 4.
    pub fn wide(x: Tensor<f32, B, 5>, p: Net) -> Tensor<f32, B, 3> {
        dense(p.fc, x)
    }

    // A rank-3 image where conv2d takes NHWC.
    pub fn image(x: Tensor<f32, 28, 28, 1>, p: Net) -> Tensor<f32, 26, 26, 8> {
        conv2d(p.conv, x)
    }

    // Two input channels for a layer of one.
    pub fn channels(x: Tensor<f32, B, 28, 28, 2>, p: Net) -> Tensor<f32, B, 26, 26, 8> {
        layers::conv2d(p.conv, x)
    }

    // An f64 input for an f32 layer.
    pub fn dtype(x: Tensor<f64, B, 4>, p: Net) -> Tensor<f32, B, 3> {
        dense(p.fc, x)
    }

    // The state's `c` has 5 units; the cell has 6.
    pub fn state(x: Tensor<f32, B, 4>, h: Tensor<f32, B, 6>, c: Tensor<f32, B, 5>, p: Net) -> Tensor<f32, B, 6> {
        let (h, c) = lstm_cell(p.cell, x, (h, c));
        h
    }

    // Queries and values of different batches.
    pub fn batches(q: Tensor<f32, 2, 5, 8>, v: Tensor<f32, 3, 5, 8>, p: Net) -> Tensor<f32, 2, 5, 8> {
        multi_head_attention(p.attn, q, v)
    }
}

fn main() {}
