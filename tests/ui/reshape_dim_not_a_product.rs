use grafo::prelude::*;

#[graph]
fn f(x: Tensor<f32, B, 4, 6>) -> Tensor<f32, B, 24> {
    reshape(x, [B + 1, 24])
}

fn main() {}
