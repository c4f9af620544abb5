use grafo::prelude::*;

#[graph(disable(inline))]
fn f(x: Tensor<f32, N>) -> Tensor<f32, N> {
    exp(x)
}

fn main() {}
