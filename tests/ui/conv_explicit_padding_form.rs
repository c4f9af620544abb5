use grafo::prelude::*;

// A pair of three numbers, and the 4-pair form padding the channels.
#[graph]
fn f(x: Tensor<f32, B, 8, 8, 3>, k: Tensor<f32, 3, 3, 3, 4>) -> Tensor<f32, B, 8, 8, 4> {
    conv2d(x, k, 1, [[1, 1, 1], [1, 1]])
}

#[graph]
fn g(x: Tensor<f32, B, 8, 8, 3>, k: Tensor<f32, 3, 3, 3, 4>) -> Tensor<f32, B, 8, 8, 4> {
    conv2d(x, k, 1, [[0, 0], [1, 1], [1, 1], [0, 1]])
}

#[graph]
fn h(x: Tensor<f32, B, 8, 8, 3>) -> Tensor<f32, B, 4, 4, 3> {
    max_pool2d(x, 2, 2, [[-1, 1], [1, 1]])
}

fn main() {}
