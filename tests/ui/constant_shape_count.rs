use grafo::prelude::*;

#[graph]
fn f() -> Tensor<i32, 2, 2> {
    constant([1, 2, 3], [2, 2])
}

fn main() {}
