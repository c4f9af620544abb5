use grafo::prelude::*;

#[graph]
fn f(a: Tensor<i32, 2, 4>) -> Tensor<i32, 2, 6> {
    pad(a, [[0, 0], [1, 1]], 0.5)
}

fn main() {}
