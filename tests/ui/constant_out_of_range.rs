use grafo::prelude::*;

#[graph]
fn f() -> Tensor<i32, 2> {
    constant([1, 3000000000])
}

fn main() {}
