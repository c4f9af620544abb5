use grafo::prelude::*;

#[graph]
fn f(x: Tensor<f32, N>) -> Tensor<bool, N> {
    (x > 0.0) % (x < 1.0)
}

fn main() {}
