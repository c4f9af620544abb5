use grafo::prelude::*;

#[graph]
fn f(x: Tensor<i32, N>) -> Tensor<i32, N> {
    x * 0.5
}

fn main() {}
