use grafo::prelude::*;

#[graph]
fn f() -> Tensor<i32, 4> {
    range(0, 4, 0)
}

fn main() {}
