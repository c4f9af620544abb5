use grafo::prelude::*;

#[graph]
fn f(a: Tensor<f32, 2, 3>) -> Tensor<f32, 2, 5> {
    pad(a, [0, 0, 1, 1])
}

fn main() {}
