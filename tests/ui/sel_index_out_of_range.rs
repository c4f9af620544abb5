use grafo::prelude::*;

#[graph]
fn f(x: Tensor<f32, B, 5>) -> Tensor<f32, B> {
    x[s![.., 5]]
}

fn main() {}
