use grafo::prelude::*;

#[graph]
fn plus_literal(x: Tensor<i32, N>) -> Tensor<i32, N> {
    x + 3000000000
}

#[graph]
fn constant_alone() -> Tensor<i32> {
    constant(5000000000)
}

#[graph]
fn body_const(x: Tensor<i32, N>) -> Tensor<i32, N> {
    const BIG: i64 = -2147483649;
    x * BIG
}

fn main() {}
