use grafo::prelude::*;

#[graph]
fn f(x: Tensor<f32, B, 5>) -> Tensor<f32, B, 5> {
    slice(x, [1, 0], [-1, -1])
}

fn main() {}
