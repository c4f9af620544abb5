use grafo::prelude::*;

#[graph]
fn f(x: Tensor<f32, N>) -> Tensor<bool> {
    reduce_max(x > 0.0)
}

fn main() {}
