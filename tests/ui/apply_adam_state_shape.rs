use grafo::prelude::*;

#[graph]
fn f(w: Tensor<f32, 4>, m: Tensor<f32, 3>, v: Tensor<f32, 4>, g: Tensor<f32, 4>) -> (Tensor<f32, 4>, Tensor<f32, 4>, Tensor<f32, 4>) {
    apply_adam(w, m, v, 0.9, 0.999, 0.001, 0.9, 0.999, 1e-8, g)
}

fn main() {}
