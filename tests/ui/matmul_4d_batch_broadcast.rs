use grafo::prelude::*;

#[graph]
fn f(q: Tensor<f32, B, 4, 16, 8>, k: Tensor<f32, B, 2, 8, 16>) -> Tensor<f32, B, 4, 16, 16> {
    matmul(q, k)
}

fn main() {}
