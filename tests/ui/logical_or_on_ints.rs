use grafo::prelude::*;

#[graph]
fn f(a: Tensor<i32, N>, b: Tensor<i32, N>) -> Tensor<bool, N> {
    logical_or(a, b)
}

fn main() {}
