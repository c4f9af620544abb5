use grafo::prelude::*;

// `on` and `off` are given together or not at all.
#[graph]
fn f(i: Tensor<i32, 3>) -> Tensor<f32, 3, 4> {
    one_hot(i, 4, 1.0)
}

fn main() {}
