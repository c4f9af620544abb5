use grafo::prelude::*;

#[graph]
fn f(q: Tensor<f32, B, 4, 16, 8>, k: Tensor<f32, B, 4, 16, 8>) -> Tensor<f32, B, 4, 16, 16> {
    matmul(q, transpose(k, [0, 1, 2, 3]))
}

fn main() {}
