use grafo::prelude::*;

#[graph]
fn f(x: Tensor<f32, B, 8, 8, 3>, k: Tensor<f32, 3, 3, 4, 2>) -> Tensor<f32, B, 8, 8, 8> {
    depthwise_conv2d(x, k, 1, SAME)
}

fn main() {}
