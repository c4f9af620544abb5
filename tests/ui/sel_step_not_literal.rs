use grafo::prelude::*;

#[graph]
fn f(x: Tensor<f32, 7, 5>, k: usize) -> Tensor<f32, 4, 5> {
    x[s![..;k, ..]]
}

fn main() {}
