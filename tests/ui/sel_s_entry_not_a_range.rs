use grafo::prelude::*;

#[graph]
fn f(x: Tensor<f32, 7, 5>) -> Tensor<f32, 5> {
    x[s![let, ..]]
}

fn main() {}
