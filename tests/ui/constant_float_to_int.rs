use grafo::prelude::*;

#[graph]
fn f() -> Tensor<i32, 2> {
    constant::<i32>([1, 2.5])
}

fn main() {}
