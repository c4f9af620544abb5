use grafo::prelude::*;

#[graph]
fn f(a: Tensor<f32, B, 3>, b: Tensor<f32, 4, 3>) -> Tensor<f32, B, 3> {
    concat([a, b], 0)
}

fn main() {}
