use grafo::prelude::*;

#[graph]
fn f(x: Tensor<f32, B, 64>, gamma: Tensor<f32, 32>, beta: Tensor<f32, 64>) -> Tensor<f32, B, 64> {
    layer_norm(x, gamma, beta)
}

fn main() {}
