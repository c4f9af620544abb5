use grafo::prelude::*;

#[graph]
fn f<T>(x: Tensor<f32, N>) -> Tensor<f32, N> {
    x
}

fn main() {}
