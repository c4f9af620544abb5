use grafo::prelude::*;

#[graph]
fn f(x: Tensor<f32, N>) -> Tensor<f32, N> {
    if norm(x) < limt {
        exp(x)
    } else {
        x
    }
}

fn main() {}
