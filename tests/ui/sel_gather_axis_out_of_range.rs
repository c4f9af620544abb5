use grafo::prelude::*;

#[graph]
fn f(a: Tensor<f32, 5, 4>, i: Tensor<i32, 3>) -> Tensor<f32, 3, 4> {
    gather(a, i, 2)
}

fn main() {}
