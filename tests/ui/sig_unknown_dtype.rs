use grafo::prelude::*;

#[graph]
fn f(x: Tensor<f16, 3>) -> Tensor<f32, 3> {
    x
}

fn main() {}
