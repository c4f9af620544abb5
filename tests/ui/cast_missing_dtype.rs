use grafo::prelude::*;

#[graph]
fn f(x: Tensor<f32, N>) -> Tensor<i32, N> {
    cast(x)
}

fn main() {}
