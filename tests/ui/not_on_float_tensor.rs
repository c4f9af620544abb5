use grafo::prelude::*;

#[graph]
fn f(x: Tensor<f32, N>, y: Tensor<f32, N>) -> Tensor<f32, N> {
    select(!x, x, y)
}

fn main() {}
