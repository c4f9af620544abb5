use grafo::prelude::*;

#[graph]
fn f(x: Tensor<bool, 2, 2>) -> Tensor<bool, 2, 2> {
    matmul(x, x)
}

fn main() {}
