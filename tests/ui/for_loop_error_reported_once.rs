use grafo::prelude::*;

#[graph]
fn f(x: Tensor<f32, B, 784>, w: Tensor<f32, 512, 10>) -> Tensor<f32, B, 10> {
    let mut y = zeros([B, 10]);
    for _i in 0..4 {
        y = y + matmul(x, w);
    }
    y
}

fn main() {}
