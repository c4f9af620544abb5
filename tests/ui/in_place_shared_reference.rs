use grafo::prelude::*;

#[graph]
fn f(x: &Tensor<f32, 3>) -> Tensor<f32, 3> {
    x * 2.0
}

fn main() {}
