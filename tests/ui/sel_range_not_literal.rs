use grafo::prelude::*;

#[graph]
fn f(n: usize) -> Tensor<i32, 4> {
    range(n)
}

fn main() {}
