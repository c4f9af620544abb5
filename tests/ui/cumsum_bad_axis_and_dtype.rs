use grafo::prelude::*;

#[graph]
fn f(x: Tensor<f32, N, 3>, p: Tensor<bool, N>) -> (Tensor<f32, N, 3>, Tensor<bool, N>) {
    (cumsum(x, 2), cumsum(p, 0))
}

fn main() {}
