use grafo::prelude::*;

#[graph]
fn f(a: Tensor<f32, B, 4>) -> Tensor<f32, B, 6> {
    pad(a, [[1, 0], [1, 1]])
}

fn main() {}
