use grafo::prelude::*;

#[graph]
fn f(x: Tensor<f32, 3, 4>) -> Tensor<f32> {
    x[s![0, 1, 2]]
}

fn main() {}
