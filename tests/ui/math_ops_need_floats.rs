use grafo::prelude::*;

#[graph]
fn f(
    n: Tensor<i32, N>,
    b: Tensor<bool, N>,
) -> (Tensor<i32, N>, Tensor<i32, N>, Tensor<i32, N>, Tensor<bool, N>, Tensor<i32, N>) {
    (floor(n), log1p(n), hard_swish(n), sign(b), silu(n))
}

fn main() {}
