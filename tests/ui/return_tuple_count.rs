use grafo::prelude::*;

#[graph]
fn f(x: Tensor<f32, N>) -> (Tensor<f32, N>, Tensor<f32, N>) {
    (exp(x), tanh(x), relu(x))
}

fn main() {}
