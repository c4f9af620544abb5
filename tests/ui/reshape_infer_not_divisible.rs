use grafo::prelude::*;

#[graph]
fn f(x: Tensor<f32, B, 4, 6>) -> Tensor<f32, B, 24> {
    let heads = reshape(x, [B * 4, 6]);
    reshape(heads, [B * 5, -1])
}

fn main() {}
