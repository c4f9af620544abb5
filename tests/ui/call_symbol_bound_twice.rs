use grafo::prelude::*;

#[graph]
mod layers {
    pub fn dot(a: Tensor<f32, N>, b: Tensor<f32, N>) -> Tensor<f32> {
        reduce_sum(a * b)
    }

    pub fn model(x: Tensor<f32, 3>, y: Tensor<f32, 4>) -> Tensor<f32> {
        dot(x, y)
    }
}

fn main() {}
