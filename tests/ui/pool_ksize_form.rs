use grafo::prelude::*;

#[graph]
fn f(x: Tensor<f32, B, 28, 28, 1>) -> Tensor<f32, B, 14, 14, 1> {
    max_pool2d(x, [2, 2, 2], 2, VALID)
}

fn main() {}
