use grafo::prelude::*;

#[graph]
fn f(x: Tensor<bool, N>, y: Tensor<bool, N>) -> Tensor<bool, N> {
    x + y
}

fn main() {}
