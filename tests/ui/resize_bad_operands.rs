use grafo::prelude::*;

#[graph]
fn f(
    x: Tensor<f32, 1, 4, 4, 3>,
    flat: Tensor<f32, 4, 4>,
    b: Tensor<bool, 1, 4, 4, 3>,
) -> (
    Tensor<f32, 1, 0, 4, 3>,
    Tensor<f32, 1, 4, 3>,
    Tensor<f32, 8, 8>,
    Tensor<bool, 1, 8, 8, 3>,
) {
    (
        resize(x, [0, 4], NEAREST),
        resize(x, [4], BILINEAR),
        resize(flat, [8, 8], BILINEAR),
        resize(b, [8, 8], NEAREST),
    )
}

fn main() {}
