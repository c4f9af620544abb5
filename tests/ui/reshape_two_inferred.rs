use grafo::prelude::*;

#[graph]
fn f(x: Tensor<f32, B, 28, 28>) -> Tensor<f32, B, 784> {
    reshape(x, [-1, -1])
}

fn main() {}
