use grafo::prelude::*;

#[graph]
fn f(x: Tensor<f32, 8, 4>) -> Tensor<f32, 9, 4> {
    x[s![0..9, ..]]
}

fn main() {}
