use grafo::prelude::*;

#[graph]
fn f(x: Tensor<f32, N>, k: i64) -> Tensor<f32, N> {
    match k {
        0 => x,
        _ => -x,
    }
}

fn main() {}
