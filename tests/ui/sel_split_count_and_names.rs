use grafo::prelude::*;

// Three pieces bound to four names: 64 is not a multiple of 3, but the mistake is the count
// (or the names), and that is what is reported.
#[graph]
fn gates(g: Tensor<f32, B, 64>) -> Tensor<f32, B, 16> {
    let (i, f, o, c) = split(g, 3, -1);
    sigmoid(i) * tanh(c)
}

#[graph]
fn sizes(g: Tensor<f32, B, 64>) -> Tensor<f32, B, 16> {
    let (i, f) = split(g, [16, 16, -1], 1);
    i
}

fn main() {}
