use grafo::prelude::*;

#[graph]
fn f(x: Tensor<i32, N>) -> Tensor<i32, N> {
    x + (2147483647 + 1)
}

fn main() {}
