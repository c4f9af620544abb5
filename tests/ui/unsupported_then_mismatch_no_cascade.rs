use grafo::prelude::*;

#[graph]
fn f(x: Tensor<f32, N>, z: Tensor<f32, M>) -> Tensor<f32, N> {
    let y = x.exp();
    let u = y + z;
    u * 2.0
}

fn main() {}
