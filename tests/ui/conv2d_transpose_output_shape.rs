use grafo::prelude::*;

// `conv2d` of [B, 9, 9, 2] by the filters with stride 2 is [B, 5, 5, 3], not the input's [B, 4, 4, 3].
#[graph]
fn wrong_size(x: Tensor<f32, B, 4, 4, 3>, k: Tensor<f32, 3, 3, 2, 3>) -> Tensor<f32, B, 9, 9, 2> {
    conv2d_transpose(x, k, [B, 9, 9, 2], 2, SAME)
}

// The filters' last axis is the input's channels.
#[graph]
fn wrong_channels(
    x: Tensor<f32, B, 4, 4, 3>,
    k: Tensor<f32, 3, 3, 3, 2>,
) -> Tensor<f32, B, 8, 8, 3> {
    conv2d_transpose(x, k, [B, 8, 8, 3], 2, SAME)
}

// One stride for rows and columns.
#[graph]
fn two_strides(x: Tensor<f32, B, 4, 4, 3>, k: Tensor<f32, 3, 3, 2, 3>) -> Tensor<f32, B, 8, 8, 2> {
    conv2d_transpose(x, k, [B, 8, 8, 2], [2, 1], SAME)
}

fn main() {}
