use grafo::prelude::*;

#[graph]
fn f(a: Tensor<f32, 2, 3>, b: Tensor<i32, 2, 3>) -> Tensor<f32, 4, 3> {
    concat([a, b], 0)
}

fn main() {}
