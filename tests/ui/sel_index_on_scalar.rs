use grafo::prelude::*;

#[graph]
fn f(a: Tensor<f32>) -> Tensor<f32> {
    a[s![0]]
}

fn main() {}
