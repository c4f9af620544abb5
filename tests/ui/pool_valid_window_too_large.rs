use grafo::prelude::*;

#[graph]
fn f(x: Tensor<f32, B, 3, 28, 1>) -> Tensor<f32, B, 1, 14, 1> {
    max_pool2d(x, [5, 2], 1, VALID)
}

fn main() {}
