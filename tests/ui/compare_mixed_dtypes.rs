use grafo::prelude::*;

#[graph]
fn f(x: Tensor<f32, N>, y: Tensor<i32, N>) -> Tensor<bool, N> {
    x < y
}

fn main() {}
