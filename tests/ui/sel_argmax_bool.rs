use grafo::prelude::*;

#[graph]
fn f(a: Tensor<bool, 3, 2>) -> Tensor<i64, 2> {
    argmax(a, 0)
}

fn main() {}
