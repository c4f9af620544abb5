use grafo::prelude::*;

#[graph]
fn f(x: Tensor<f32, 4>, lo: Tensor<f32, 3, 4>) -> Tensor<f32, 4> {
    clip_by_value(x, lo, 6.0)
}

fn main() {}
