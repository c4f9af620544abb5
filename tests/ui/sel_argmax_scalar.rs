use grafo::prelude::*;

#[graph]
fn f(a: Tensor<f32>) -> Tensor<i64> {
    argmax(a)
}

fn main() {}
