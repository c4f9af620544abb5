use grafo::prelude::*;

#[graph]
fn f(x: Tensor<f32, B, 4>) -> Tensor<f32, B, 4> {
    x[s![1.., ..]]
}

fn main() {}
