use grafo::prelude::*;

#[graph]
fn f(x: Tensor<f32, 8, 4>) -> Tensor<f32, 4> {
    x[s![1;2, ..]]
}

fn main() {}
