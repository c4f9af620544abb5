use grafo::prelude::*;

#[graph]
fn f(x: Tensor<f32, N>, limit: Tensor<f32>) -> Tensor<f32, N> {
    let mut y = x;
    while norm(y) < limit {
        y = y * 2.0;
    }
    y
}

fn main() {}
