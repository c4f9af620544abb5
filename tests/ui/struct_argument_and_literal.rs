use grafo::prelude::*;

#[graph]
mod model {
    pub struct Dense {
        pub w: Tensor<f32, 8, 4>,
        pub b: Tensor<f32, 4>,
    }
    pub struct Other {
        pub w: Tensor<f32, 8, 4>,
        pub b: Tensor<f32, 4>,
    }

    pub fn dense(x: Tensor<f32, B, 8>, d: Dense) -> Tensor<f32, B, 4> {
        matmul(x, d.w) + d.b
    }

    // A struct of another type, and a tensor, where a `Dense` is expected.
    pub fn wrong_argument(x: Tensor<f32, B, 8>, o: Other) -> Tensor<f32, B, 4> {
        dense(x, o) + dense(x, o.w)
    }

    // A literal with a misshapen field, a missing field and an unknown one.
    pub fn step(d: Dense, lr: f32) -> Dense {
        Dense { w: d.b * lr, bias: d.b }
    }

    // A struct used as a tensor.
    pub fn as_operand(d: Dense) -> Tensor<f32, 4> {
        relu(d)
    }
}

fn main() {}
