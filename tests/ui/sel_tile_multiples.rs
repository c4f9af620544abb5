use grafo::prelude::*;

#[graph]
fn f(a: Tensor<f32, B, 4>) -> Tensor<f32, B, 8> {
    tile(a, [2])
}

fn main() {}
