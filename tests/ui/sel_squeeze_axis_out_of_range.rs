use grafo::prelude::*;

#[graph]
fn f(a: Tensor<f32, 2, 1>) -> Tensor<f32, 2> {
    squeeze(a, 2)
}

fn main() {}
