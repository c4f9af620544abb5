use grafo::prelude::*;

#[graph]
mod heads {
    pub fn head_sums(x: Tensor<f32, { R * 4 }, 3>) -> Tensor<f32, R, 3> {
        reduce_sum(reshape(x, [R, 4, 3]), 1)
    }

    // `B*6` is not 4 times a dim: the call names `x` and points at the argument.
    pub fn caller(x: Tensor<f32, B, 6, 3>) -> Tensor<f32, B, 3> {
        head_sums(reshape(x, [B * 6, 3]))
    }
}

fn main() {}
