use grafo::prelude::*;

#[graph]
fn f(a: Tensor<f32, B, 4, 8>, b: Tensor<f32, C, 8, 2>) -> Tensor<f32, B, 4, 2> {
    matmul(a, b)
}

fn main() {}
