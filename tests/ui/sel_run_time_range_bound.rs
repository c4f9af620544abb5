use grafo::prelude::*;

#[graph]
fn f(x: Tensor<f32, 8, 4>, t: usize) -> Tensor<f32, 4, 4> {
    x[s![t.., ..]]
}

fn main() {}
