use grafo::prelude::*;

#[graph]
fn f(x: Tensor<f32, N>) -> Tensor<f32, N> {
    if x > 0.0 {
        x
    } else {
        -x
    }
}

fn main() {}
