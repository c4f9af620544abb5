use grafo::prelude::*;

#[graph]
fn f(c: Tensor<bool, N>, a: Tensor<f32, N>, b: Tensor<i32, N>) -> Tensor<f32, N> {
    select(c, a, b)
}

fn main() {}
