use grafo::prelude::*;

#[graph]
fn f(x: Tensor<f32, B, 3>, y: Tensor<f32, B, 4>) -> Tensor<f32, B, 3> {
    x + y
}

fn main() {}
