use grafo::prelude::*;

#[graph]
fn f(a: Tensor<f32, B, 3>, b: Tensor<f32, C, 3>) -> Tensor<f32, 3> {
    reduce_sum(concat([a, b], 0), 0)
}

fn main() {}
