use grafo::prelude::*;

#[graph]
fn variance_f64(
    x: Tensor<f32, B, 64>,
    mean: Tensor<f32, 64>,
    variance: Tensor<f64, 64>,
    offset: Tensor<f32, 64>,
    scale: Tensor<f32, 64>,
) -> Tensor<f32, B, 64> {
    batch_normalization(x, mean, variance, offset, scale, 1e-3)
}

#[graph]
fn scale_shape(
    x: Tensor<f32, B, 64>,
    mean: Tensor<f32, 64>,
    variance: Tensor<f32, 64>,
    offset: Tensor<f32, 64>,
    scale: Tensor<f32, 32>,
) -> Tensor<f32, B, 64> {
    batch_normalization(x, mean, variance, offset, scale, 1e-3)
}

fn main() {}
