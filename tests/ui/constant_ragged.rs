use grafo::prelude::*;

#[graph]
fn f() -> Tensor<f32, 2, 3> {
    constant([[1.0, 2.0, 3.0], [4.0, 5.0]])
}

fn main() {}
