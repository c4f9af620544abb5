use grafo::prelude::*;

#[graph]
fn f(x: Tensor<f32, N>) -> Tensor<f32, N> {
    x + reduce_sum(zeros([M, 3]))
}

fn main() {}
