use grafo::prelude::*;

#[graph]
fn f(x: Tensor<f32, 3>, lr: &mut f32) -> Tensor<f32, 3> {
    x * lr
}

fn main() {}
