use grafo::prelude::*;

#[graph]
fn f(x: Tensor<f32, 3>, name: String) -> Tensor<f32, 3> {
    x
}

fn main() {}
