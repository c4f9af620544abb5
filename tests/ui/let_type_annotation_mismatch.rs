use grafo::prelude::*;

#[graph]
fn f(x: Tensor<f32, B, 784>, w: Tensor<f32, 784, 10>) -> Tensor<f32, B, 10> {
    let h: Tensor<f32, B, 784> = matmul(x, w);
    h
}

fn main() {}
