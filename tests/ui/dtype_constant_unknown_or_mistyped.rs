use grafo::prelude::*;

#[graph]
fn unknown(x: Tensor<f32, N>) -> Tensor<f32, N> {
    x + f32::LARGEST
}

#[graph]
fn integer_infinity(x: Tensor<i32, N>) -> Tensor<i32, N> {
    x + i32::INFINITY
}

// `f32::NEG_INFINITY` is f32, as `1.0f32` is: it does not take an f64 operand's dtype.
#[graph]
fn not_weak(x: Tensor<f64, N>) -> Tensor<f64, N> {
    select(x > 0.0, x, f32::NEG_INFINITY)
}

#[graph]
fn other_path(x: Tensor<f32, N>) -> Tensor<f32, N> {
    x + my::SCALE
}

fn main() {}
