use grafo::prelude::*;

#[graph]
fn f(x: Tensor<f32, B, 10>, b: Tensor<f32, 16>) -> Tensor<f32, B, 10> {
    bias_add(x, b)
}

fn main() {}
