use grafo::prelude::*;

#[graph]
fn f(x: Tensor<f32, 784>, w: Tensor<f32, 784, 10>) -> Tensor<f32, 10> {
    matmul(x, w)
}

fn main() {}
