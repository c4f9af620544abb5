use grafo::prelude::*;

#[graph]
fn f(x: Tensor<f32, B, 8, 8, 3>, k: Tensor<f32, 3, 3, 3>) -> Tensor<f32, B, 8, 8, 3> {
    depthwise_conv2d(x, k, 1, SAME)
}

fn main() {}
