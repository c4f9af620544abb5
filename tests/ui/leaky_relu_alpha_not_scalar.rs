use grafo::prelude::*;

#[graph]
fn f(x: Tensor<f32, N>, a: Tensor<f32, N>) -> Tensor<f32, N> {
    leaky_relu(x, a)
}

fn main() {}
