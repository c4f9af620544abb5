use grafo::prelude::*;

#[graph]
fn f() -> Tensor<i32, 0> {
    range(5, 1, 1)
}

fn main() {}
