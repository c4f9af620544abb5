use grafo::prelude::*;

#[graph]
fn f() -> Tensor<i64> {
    constant::<i64>(2.5)
}

fn main() {}
