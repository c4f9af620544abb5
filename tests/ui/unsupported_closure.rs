use grafo::prelude::*;

#[graph]
fn f(x: Tensor<f32, N>) -> Tensor<f32, N> {
    let double = |t| t * 2.0;
    x
}

fn main() {}
