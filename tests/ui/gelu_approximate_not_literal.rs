use grafo::prelude::*;

#[graph]
fn f(x: Tensor<f32, N>, tanh_form: bool) -> Tensor<f32, N> {
    gelu(x, tanh_form)
}

fn main() {}
