use grafo::prelude::*;

#[graph]
fn f(x: Tensor<f32, N>, limit: Tensor<f32>) -> Tensor<f32, N> {
    if norm(x) < limit {
        x
    } else {
        cast::<f64>(x)
    }
}

fn main() {}
