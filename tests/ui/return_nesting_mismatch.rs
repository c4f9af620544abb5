use grafo::prelude::*;

#[graph]
fn f(x: Tensor<f32, N>) -> (Tensor<f32, N>, (Tensor<f32>, Tensor<f32>)) {
    (x, reduce_sum(x), reduce_max(x))
}

fn main() {}
