use grafo::prelude::*;

#[graph]
fn f(x: Tensor<f32, 3>) {
    exp(x);
}

fn main() {}
