use grafo::prelude::*;

#[graph]
fn f(x: Tensor<f32, N>, n: usize) -> Tensor<f32, N> {
    let mut y = x;
    for _i in 0..n {
        y = tanh(y);
    }
    y
}

fn main() {}
