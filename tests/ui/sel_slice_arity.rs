use grafo::prelude::*;

#[graph]
fn f(x: Tensor<f32, 7, 5>) -> Tensor<f32, 3, 5> {
    slice(x, [2, 0])
}

fn main() {}
