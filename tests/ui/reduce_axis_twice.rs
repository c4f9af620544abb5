use grafo::prelude::*;

#[graph]
fn f(x: Tensor<f32, B, 10>) -> Tensor<f32> {
    reduce_sum(x, [1, -1])
}

fn main() {}
