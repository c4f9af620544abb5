use grafo::prelude::*;

#[graph]
fn f(x: Tensor<i64, N>) -> Tensor<i64, N> {
    x + 99999999999999999999
}

fn main() {}
