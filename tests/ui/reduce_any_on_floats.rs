use grafo::prelude::*;

#[graph]
fn f(x: Tensor<f32, N>, n: Tensor<i32, N>, p: Tensor<bool, N, 3>) -> (Tensor<bool>, Tensor<bool>, Tensor<bool, N>) {
    (reduce_any(x), reduce_all(n), reduce_any(p, 2))
}

fn main() {}
