use grafo::prelude::*;

#[graph]
fn f() -> Tensor<i32, 4> {
    range::<i32>(0.5, 2.5, 0.5)
}

fn main() {}
