use grafo::prelude::*;

#[graph]
fn f(x: Tensor<i32, N>) -> Tensor<i32, N> {
    x + pow(2, -1)
}

fn main() {}
