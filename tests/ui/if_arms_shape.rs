use grafo::prelude::*;

#[graph]
fn f(x: Tensor<f32, N>, y: Tensor<f32, M>, limit: Tensor<f32>) -> Tensor<f32, N> {
    if norm(x) < limit {
        x
    } else {
        y
    }
}

fn main() {}
