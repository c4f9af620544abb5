use grafo::prelude::*;

#[graph]
fn f(x: Tensor<f32, N>) -> Tensor<f32, N> {
    let y = x;
    y = exp(y);
    y
}

fn main() {}
