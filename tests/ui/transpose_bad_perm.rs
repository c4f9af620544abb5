use grafo::prelude::*;

#[graph]
fn f(x: Tensor<f32, B, 3, 4>) -> Tensor<f32, 4, 3, B> {
    transpose(x, [2, 1, 1])
}

fn main() {}
