use grafo::prelude::*;

#[graph]
fn f(i: Tensor<i32, 3>, on: Tensor<f32, 3>) -> Tensor<f32, 3, 4> {
    one_hot(i, 4, on, 0.0)
}

fn main() {}
