use grafo::prelude::*;

#[graph]
fn f(a: Tensor<f32, 6>) -> Tensor<f32, 2> {
    let (x, y) = split(a, 3, 0);
    x
}

fn main() {}
