use grafo::prelude::*;

#[graph]
fn f(a: Tensor<f32, 2, 3>) -> Tensor<f32, 2, 3> {
    concat(a, 0)
}

fn main() {}
