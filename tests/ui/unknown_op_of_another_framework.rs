use grafo::prelude::*;

// `selu` is within one edit of `elu`, `relu` and `gelu`, `unsqueeze` of `squeeze`: each
// compiles and means something else, so the message says what to write instead.
#[graph]
fn activations(x: Tensor<f32, N>) -> Tensor<f32, N> {
    selu(x)
}

#[graph]
fn shapes(x: Tensor<f32, N>) -> Tensor<f32, 1, N> {
    unsqueeze(x, 0)
}

#[graph]
fn missing(x: Tensor<f32, N>) -> Tensor<f32, N> {
    atan(x)
}

fn main() {}
