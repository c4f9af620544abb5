use grafo::prelude::*;

#[graph]
fn f(a: Tensor<f32, 2, 3>) -> Tensor<f32, 2, 3, 1> {
    expand_dims(a, 3)
}

fn main() {}
