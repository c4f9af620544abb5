use grafo::prelude::*;

#[graph]
fn f(a: Tensor<f32, 3, 4>) -> Tensor<f32, 3, 1> {
    let (x, y, z) = split(a, [1, -1, -1], 1);
    x
}

fn main() {}
