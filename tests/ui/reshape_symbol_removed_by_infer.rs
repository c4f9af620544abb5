use grafo::prelude::*;

#[graph]
fn f(x: Tensor<f32, B, 4, 6>, y: Tensor<f32, N, 6>) -> Tensor<f32, B, 24> {
    let heads = reshape(x, [B * 4, 6]);
    reshape(heads, [N, -1])
}

fn main() {}
