use grafo::prelude::*;

#[graph]
fn f(x: Tensor<f32, N>, limit: Tensor<f32>) -> Tensor<f32, N> {
    let y = if norm(x) < limit { exp(x) };
    y
}

fn main() {}
