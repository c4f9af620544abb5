use grafo::prelude::*;

#[graph]
fn f(a: Tensor<f32, B, 4>) -> Tensor<f32, 1, 4> {
    let (x, y) = split(concat([a, a], 0), [1, -1], 0);
    x
}

fn main() {}
