use grafo::prelude::*;

#[graph]
fn f(x: Tensor<i32, N>) -> Tensor<i32, N> {
    x + 1 / 0
}

fn main() {}
