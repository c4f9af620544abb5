use grafo::prelude::*;

#[graph]
fn f() -> Tensor<f64, 2> {
    constant([1.0f64, 2.0f32])
}

fn main() {}
