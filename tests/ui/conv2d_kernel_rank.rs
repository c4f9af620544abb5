use grafo::prelude::*;

#[graph]
fn f(x: Tensor<f32, B, 32, 32, 3>, k: Tensor<f32, 3, 3, 16>) -> Tensor<f32, B, 32, 32, 16> {
    conv2d(x, k, 1, SAME)
}

fn main() {}
