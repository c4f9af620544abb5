use grafo::prelude::*;

#[graph]
fn f(n: Tensor<i32, N>) -> Tensor<i32, N> {
    floormod(n, 3) + n / 0
}

fn main() {}
