use grafo::prelude::*;

#[graph]
fn f(x: Tensor<f32>) -> Tensor<f32> {
    constant(x)
}

fn main() {}
