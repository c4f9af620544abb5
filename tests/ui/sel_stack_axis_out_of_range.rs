use grafo::prelude::*;

#[graph]
fn f(a: Tensor<f32, 2, 3>) -> Tensor<f32, 2, 3, 2> {
    stack([a, a], 3)
}

fn main() {}
