use grafo::prelude::*;

#[graph]
fn f(x: Tensor<f32, B, 3>) -> Tensor<f32, B, 3> {
    x * B
}

fn main() {}
