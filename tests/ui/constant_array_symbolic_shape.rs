use grafo::prelude::*;

#[graph]
fn f(x: Tensor<f32, B>) -> Tensor<f32, B> {
    x + constant([1.0, 2.0], [B])
}

fn main() {}
