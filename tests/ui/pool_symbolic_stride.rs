use grafo::prelude::*;

#[graph]
fn f(x: Tensor<f32, B, H, W, 1>) -> Tensor<f32, B, H, W, 1> {
    max_pool2d(x, 2, 2, SAME)
}

fn main() {}
