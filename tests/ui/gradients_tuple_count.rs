use grafo::prelude::*;

#[graph]
fn f(x: Tensor<f32, 3>, w: Tensor<f32, 3>) -> Tensor<f32, 3> {
    let y = reduce_sum(x * w);
    let (gx, gw, gz) = gradients(y, (x, w));
    gx + gw + gz
}

fn main() {}
