use grafo::prelude::*;

// Explicit padding of a symbolic height has no size grafo can name: SAME or VALID instead.
#[graph]
fn f(x: Tensor<f32, B, H, 8, 3>, k: Tensor<f32, 3, 3, 3, 4>) -> Tensor<f32, B, H, 8, 4> {
    conv2d(x, k, 1, [[1, 1], [1, 1]])
}

fn main() {}
