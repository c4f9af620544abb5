use grafo::prelude::*;

#[graph]
mod net {
    pub struct Net {
        pub fc: Dense<4, 3>,
        pub conv: Conv2d<3, 3, 1, 8>,
        pub emb: Embedding<10, 4>,
    }

    // `SAME` is no activation.
    pub fn activation(x: Tensor<f32, B, 4>, p: Net) -> Tensor<f32, B, 3> {
        dense(p.fc, x, SAME)
    }

    // `FULL` is no padding.
    pub fn padding(x: Tensor<f32, B, 28, 28, 1>, p: Net) -> Tensor<f32, B, 26, 26, 8> {
        conv2d(p.conv, x, 1, FULL)
    }

    // Too many arguments.
    pub fn arity(x: Tensor<f32, B, 4>, p: Net) -> Tensor<f32, B, 3> {
        dense(p.fc, x, relu, 2)
    }

    // A tensor where the layer goes, and the wrong layer.
    pub fn not_a_layer(x: Tensor<f32, B, 4>, w: Tensor<f32, 4, 3>, p: Net) -> (Tensor<f32, B, 3>, Tensor<f32, B, 3>) {
        (dense(w, x), dense(p.emb, x))
    }

    // Float ids.
    pub fn ids(x: Tensor<f32, B>, p: Net) -> Tensor<f32, B, 4> {
        embedding(p.emb, x)
    }

    // No such function in the library.
    pub fn unknown(x: Tensor<f32, B, 4>, p: Net) -> Tensor<f32, B, 3> {
        layers::linear(p.fc, x)
    }
}

fn main() {}
