use grafo::prelude::*;

#[graph]
fn f(x: Tensor<f32, N>, limit: Tensor<f32>) -> Tensor<f32, N> {
    let mut y = x;
    if norm(x) < limit {
        y = cast::<f64>(x);
    }
    y
}

fn main() {}
