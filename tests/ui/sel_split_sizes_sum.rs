use grafo::prelude::*;

#[graph]
fn f(a: Tensor<f32, 2, 6>) -> Tensor<f32, 2, 3> {
    let (x, y) = split(a, [2, 3], 1);
    x
}

fn main() {}
