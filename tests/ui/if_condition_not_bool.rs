use grafo::prelude::*;

#[graph]
fn f(x: Tensor<f32, N>, c: Tensor<f32>) -> Tensor<f32, N> {
    if c {
        x
    } else {
        -x
    }
}

fn main() {}
