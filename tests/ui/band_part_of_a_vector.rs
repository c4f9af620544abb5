use grafo::prelude::*;

#[graph]
fn f(x: Tensor<f32, N>) -> Tensor<f32, N> {
    band_part(x, -1, 0)
}

fn main() {}
