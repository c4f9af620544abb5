use grafo::prelude::*;

#[graph]
fn f(x: Tensor<f32, B, 8, 8, 3>, k: Tensor<f32, 3, 3, 3, 4>) -> Tensor<f32, B, 8, 8, 4> {
    conv2d(x, k, 0, SAME)
}

fn main() {}
