use grafo::prelude::*;

// Integer literals beyond i64 where an op takes an integer: each is out of range, not "not an
// integer literal".
#[graph]
fn step(x: Tensor<f32, 8>) -> Tensor<f32, 1> {
    x[s![..;99999999999999999999]]
}

#[graph]
fn padding(x: Tensor<f32, 8>) -> Tensor<f32, 8> {
    pad(x, [[0, 99999999999999999999]])
}

#[graph]
fn window(x: Tensor<f32, 1, 8, 8, 2>) -> Tensor<f32, 1, 8, 8, 2> {
    max_pool2d(x, -99999999999999999999, 1, SAME)
}

fn main() {}
