use grafo::prelude::*;

#[graph]
fn f(x: Tensor<f32, B, 784>, w: Tensor<f32, 512, 10>, limit: Tensor<f32>) -> Tensor<f32, B, 784> {
    let mut y = x;
    if norm(x) < limit {
        y = matmul(x, w);
    }
    y
}

fn main() {}
