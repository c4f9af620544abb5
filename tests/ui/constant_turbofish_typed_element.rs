use grafo::prelude::*;

#[graph]
fn f() -> Tensor<f64, 2> {
    constant::<f64>([1.0, 2.0f32])
}

fn main() {}
