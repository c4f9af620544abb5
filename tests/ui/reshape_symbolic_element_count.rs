use grafo::prelude::*;

#[graph]
fn f(x: Tensor<f32, B, 28, 28>) -> Tensor<f32, B, 780> {
    reshape(x, [B, 780])
}

fn main() {}
