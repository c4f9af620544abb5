use grafo::prelude::*;

#[graph]
mod layers {
    pub fn row_sum(x: Tensor<f32, N, 4>) -> Tensor<f32, N> {
        reduce_sum(x, -1)
    }

    pub fn model(x: Tensor<f32, B, 3>) -> Tensor<f32, B> {
        row_sum(x * 2.0)
    }
}

fn main() {}
