use grafo::prelude::*;

#[graph]
fn f(x: Tensor<f32, 3, 4>) -> Tensor<f32, 4> {
    x[0]
}

fn main() {}
