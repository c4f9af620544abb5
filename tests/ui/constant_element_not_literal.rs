use grafo::prelude::*;

#[graph]
fn f(x: Tensor<f32>) -> Tensor<f32, 2> {
    constant([1.0, x])
}

fn main() {}
