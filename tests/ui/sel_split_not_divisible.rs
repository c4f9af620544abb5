use grafo::prelude::*;

#[graph]
fn f(a: Tensor<f32, 2, 7>) -> Tensor<f32, 2, 3> {
    let (x, y) = split(a, 2, 1);
    x
}

fn main() {}
