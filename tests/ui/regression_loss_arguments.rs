use grafo::prelude::*;

#[graph]
fn mse_shapes(y: Tensor<f32, 4>, p: Tensor<f32, 4, 1>) -> Tensor<f32> {
    mean_squared_error(y, p)
}

#[graph]
fn huber_delta(y: Tensor<f32, 4>, p: Tensor<f32, 4>, d: Tensor<f32, 4>) -> Tensor<f32> {
    huber_loss(y, p, d)
}

#[graph]
fn clip_norm_dtype(t: Tensor<f32, 4>, c: Tensor<f64>) -> Tensor<f32, 4> {
    clip_by_norm(t, c)
}

#[graph]
fn rms_prop_state(w: Tensor<f32, 4>, ms: Tensor<f32, 4>, mom: Tensor<f32, 3>, g: Tensor<f32, 4>) -> Tensor<f32, 4> {
    let (w, ms, mom) = apply_rms_prop(w, ms, mom, 0.01, 0.9, 0.0, 1e-7, g);
    w
}

fn main() {}
