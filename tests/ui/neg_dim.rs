use grafo::prelude::*;

#[graph]
fn f(x: Tensor<f32, -1>) -> Tensor<f32, 3> {
    x
}

fn main() {}
