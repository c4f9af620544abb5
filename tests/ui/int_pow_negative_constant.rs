use grafo::prelude::*;

#[graph]
fn f(n: Tensor<i64, N>) -> Tensor<i64, N> {
    pow(n, -2)
}

fn main() {}
