use grafo::prelude::*;

#[graph]
fn f(x: Tensor<f32, N>) -> Tensor<f32, N> {
    let mut y = x;
    for _i in 0..3 {
        y = frobnicate(y);
    }
    y
}

fn main() {}
