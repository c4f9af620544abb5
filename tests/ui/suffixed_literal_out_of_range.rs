use grafo::prelude::*;

#[graph]
fn ints(x: Tensor<i32, N>) -> Tensor<i32, N> {
    x + 3000000000i32
}

#[graph]
fn floats(x: Tensor<f32, N>) -> Tensor<f32, N> {
    x * -1e40f32
}

fn main() {}
