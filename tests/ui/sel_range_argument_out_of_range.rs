use grafo::prelude::*;

// `as` would wrap the limit to 705032704 (five zeros) and the second to -1294967296.
#[graph]
fn wraps(x: Tensor<i32, 5>) -> Tensor<i32, 5> {
    x + range(0, 5000000000, 1000000000)
}

#[graph]
fn refused() -> Tensor<i32, 3> {
    range(0, 3000000000, 1000000000)
}

#[graph]
fn typed() -> Tensor<i32, 1> {
    range::<i32>(-2147483649, 0, 2147483647)
}

// A float limit beyond f32 would round to infinity, and the length with it.
#[graph]
fn float_limit() -> Tensor<f32, 10> {
    range(0.0, 1e39, 1e38)
}

fn main() {}
