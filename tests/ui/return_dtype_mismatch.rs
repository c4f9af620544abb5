use grafo::prelude::*;

#[graph]
fn f(x: Tensor<f32, N>) -> Tensor<f64, N> {
    exp(x)
}

fn main() {}
