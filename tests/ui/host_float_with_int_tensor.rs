use grafo::prelude::*;

#[graph]
fn f(x: Tensor<i32, N>, s: f32) -> Tensor<i32, N> {
    x * s
}

fn main() {}
