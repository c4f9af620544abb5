use grafo::prelude::*;

#[graph]
fn f(i: Tensor<i32, 3>, d: usize) -> Tensor<f32, 3, 4> {
    one_hot(i, d)
}

fn main() {}
