use grafo::prelude::*;

#[graph]
fn f() -> Tensor<f32, 1000, 1000000> {
    constant([[0.0; 1000000]; 1000])
}

fn main() {}
