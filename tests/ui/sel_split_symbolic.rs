use grafo::prelude::*;

#[graph]
fn f(a: Tensor<f32, B, 4>) -> Tensor<f32, B, 4> {
    let (x, y) = split(a, 2, 0);
    x
}

fn main() {}
