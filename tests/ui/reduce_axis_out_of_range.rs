use grafo::prelude::*;

#[graph]
fn f(x: Tensor<f32, B, 10>) -> Tensor<f32, B> {
    reduce_sum(x, 2)
}

fn main() {}
