use grafo::prelude::*;

#[graph]
fn f(x: Tensor<f32, B, 10>) -> Tensor<f32, B, 10> {
    softmax(x, -3)
}

fn main() {}
