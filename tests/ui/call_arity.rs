use grafo::prelude::*;

#[graph]
mod layers {
    pub fn affine(x: Tensor<f32, N>, a: Tensor<f32>, b: Tensor<f32>) -> Tensor<f32, N> {
        x * a + b
    }

    pub fn model(x: Tensor<f32, N>, a: Tensor<f32>) -> Tensor<f32, N> {
        affine(x, a)
    }
}

fn main() {}
