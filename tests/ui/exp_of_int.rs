use grafo::prelude::*;

#[graph]
fn f(x: Tensor<i32, N>) -> Tensor<i32, N> {
    exp(x)
}

fn main() {}
