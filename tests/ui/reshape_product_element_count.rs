use grafo::prelude::*;

#[graph]
fn f(x: Tensor<f32, B, 4, 6>) -> Tensor<f32, B, 24> {
    let heads = reshape(x, [B * 4, 7]);
    reshape(heads, [B, 24])
}

fn main() {}
