use grafo::prelude::*;

#[graph]
fn f(x: Tensor<f32, 28, 28>) -> Tensor<f32, 780> {
    reshape(x, [780])
}

fn main() {}
