use grafo::prelude::*;

#[graph]
fn f(a: Tensor<f32>) -> Tensor<f32, 2> {
    concat([a, a], 0)
}

fn main() {}
