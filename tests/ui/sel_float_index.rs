use grafo::prelude::*;

#[graph]
fn f(x: Tensor<f32, 8, 4>, y: Tensor<f32>) -> Tensor<f32, 4> {
    x[s![y, ..]]
}

fn main() {}
