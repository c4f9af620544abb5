use grafo::prelude::*;

// A dim is a literal, a symbol or a product of them: a sum is not a dim.
#[graph]
fn f(x: Tensor<f32, { B + 4 }>) -> Tensor<f32, B> {
    x
}

fn main() {}
