use grafo::prelude::*;

#[graph]
fn mlp(x: Tensor<f32, B, 784>, w: Tensor<f32, 512, 10>) -> Tensor<f32, B, 10> {
    matmul(x, w)
}

fn main() {}
