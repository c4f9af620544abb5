use grafo::prelude::*;

#[graph]
fn f(w: &mut Tensor<f32, 3>, g: Tensor<f32, 3>) -> Tensor<f32, 3> {
    *w = *w - g;
    let w = w * 2.0;
    *w = g;
    *g * 2.0
}

fn main() {}
