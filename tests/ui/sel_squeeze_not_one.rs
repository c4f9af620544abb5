use grafo::prelude::*;

#[graph]
fn f(a: Tensor<f32, 2, 1>) -> Tensor<f32, 1> {
    squeeze(a, [0])
}

fn main() {}
