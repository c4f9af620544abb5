use grafo::prelude::*;

#[graph]
fn f(x: Tensor<f32, 1, 4, 4, 3>) -> Tensor<f32, 1, 8, 8, 3> {
    resize(x, [8, 8], BICUBIC)
}

fn main() {}
