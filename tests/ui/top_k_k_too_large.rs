use grafo::prelude::*;

#[graph]
fn f(
    x: Tensor<f32, B, 3>,
    s: Tensor<f32>,
    b: Tensor<bool, 4>,
) -> (Tensor<f32, B, 5>, Tensor<i32, B, 5>) {
    let (_, _) = top_k(s, 1);
    let (_, _) = top_k(b, 1);
    let (_, _) = top_k(x, -1);
    top_k(x, 5)
}

fn main() {}
