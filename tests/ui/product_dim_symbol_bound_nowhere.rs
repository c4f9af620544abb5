use grafo::prelude::*;

// `B` appears only in `B*B`: no size binds it (it would take a square root).
#[graph]
fn f(x: Tensor<f32, { B * B }>) -> Tensor<f32, { B * B }> {
    x + 1.0
}

fn main() {}
