use grafo::prelude::*;

#[graph]
fn f(n: Tensor<i32, N>) -> Tensor<i32, N> {
    erf(n)
}

fn main() {}
