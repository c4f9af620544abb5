use grafo::prelude::*;

#[graph]
fn f(x: Tensor<f32, N>) -> Tensor<f32, N> {
    let mut y = x;
    loop {
        y = y * 2.0;
    }
    y
}

fn main() {}
