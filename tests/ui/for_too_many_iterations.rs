use grafo::prelude::*;

#[graph]
fn f(x: Tensor<f32, N>) -> Tensor<f32, N> {
    let mut y = x;
    for _i in 0..100000 {
        y = y + 1.0;
    }
    y
}

fn main() {}
