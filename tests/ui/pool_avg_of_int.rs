use grafo::prelude::*;

#[graph]
fn f(x: Tensor<i32, B, 28, 28, 1>) -> Tensor<i32, B, 14, 14, 1> {
    avg_pool2d(x, 2, 2, VALID)
}

fn main() {}
