use grafo::prelude::*;

#[graph]
fn f(x: Tensor<f32, N>, __grafo_scale: f32) -> Tensor<f32, N> {
    x * __grafo_scale
}

fn main() {}
