use grafo::prelude::*;

// Explicit padding is TF's for `conv2d`, `depthwise_conv2d` and `max_pool2d`, not `avg_pool2d`.
#[graph]
fn f(x: Tensor<f32, B, 28, 28, 1>) -> Tensor<f32, B, 15, 15, 1> {
    avg_pool2d(x, 2, 2, [[1, 1], [1, 1]])
}

fn main() {}
