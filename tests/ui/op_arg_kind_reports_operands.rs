use grafo::prelude::*;

// A wrong-kind argument does not hide a mistake in an operand of the same call.
#[graph]
fn f(x: Tensor<f32, 1, 4, 4, 1>) -> Tensor<f32, 1, 2, 2, 1> {
    max_pool2d(exp(y), 2, 2, SAMEE)
}

fn main() {}
