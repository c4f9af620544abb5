use grafo::prelude::*;

#[graph]
fn f(x: Tensor<f32, 3, 5>) -> Tensor<f32, 5> {
    x[s![-4, ..]]
}

fn main() {}
