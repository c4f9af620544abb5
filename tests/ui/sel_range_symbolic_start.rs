use grafo::prelude::*;

#[graph]
fn f(a: Tensor<f32, B>) -> Tensor<i32, B> {
    range(1, B, 1)
}

fn main() {}
