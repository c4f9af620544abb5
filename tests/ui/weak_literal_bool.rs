use grafo::prelude::*;

#[graph]
fn f(x: Tensor<bool, N>) -> Tensor<bool, N> {
    x * 2
}

fn main() {}
