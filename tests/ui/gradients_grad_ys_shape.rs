use grafo::prelude::*;

#[graph]
fn f(x: Tensor<f32, 3>, g: Tensor<f32, 2>) -> Tensor<f32, 3> {
    let y = x * x;
    gradients(y, x, g)
}

fn main() {}
