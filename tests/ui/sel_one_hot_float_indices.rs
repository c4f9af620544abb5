use grafo::prelude::*;

#[graph]
fn f(i: Tensor<f32, 3>) -> Tensor<f32, 3, 4> {
    one_hot(i, 4)
}

fn main() {}
