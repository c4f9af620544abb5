use grafo::prelude::*;

#[graph]
fn f(x: Tensor<f32, N>) -> () {
    x
}

fn main() {}
