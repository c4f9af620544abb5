use grafo::prelude::*;

#[graph]
mod mlp {
    pub struct Dense {
        pub w: Tensor<f32, 8, 4>,
        pub b: Tensor<f32, 4>,
    }
    pub struct Net {
        pub hidden: Dense,
        pub out: Dense,
    }

    pub fn forward(x: Tensor<f32, B, 8>, p: Net) -> Tensor<f32, B, 4> {
        matmul(x, p.hiden.w) + p.hidden.bias
    }
}

fn main() {}
