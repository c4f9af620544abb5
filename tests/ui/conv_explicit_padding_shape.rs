use grafo::prelude::*;

// The declared result must be what the explicit padding gives: 4 rows and 5 columns.
#[graph]
fn f(x: Tensor<f32, B, 7, 9, 3>, k: Tensor<f32, 3, 3, 3, 4>) -> Tensor<f32, B, 4, 4, 4> {
    conv2d(x, k, 2, [[1, 1], [1, 1]])
}

fn main() {}
