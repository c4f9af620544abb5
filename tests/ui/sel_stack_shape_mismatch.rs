use grafo::prelude::*;

#[graph]
fn f(a: Tensor<f32, 2, 3>, b: Tensor<f32, 3, 2>) -> Tensor<f32, 2, 2, 3> {
    stack([a, b], 0)
}

fn main() {}
