use grafo::prelude::*;

#[graph]
fn f(a: Tensor<f32, 3, 0>) -> Tensor<i64, 3> {
    argmax(a, 1)
}

fn main() {}
