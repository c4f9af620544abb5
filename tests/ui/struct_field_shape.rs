use grafo::prelude::*;

#[graph]
mod mlp {
    pub struct Dense {
        pub w: Tensor<f32, 784, 512>,
        pub b: Tensor<f32, 512>,
    }
    pub struct Net {
        pub hidden: Dense,
        pub out: Dense,
    }

    // `p.out.w` is [784, 512]: the second layer's input is the hidden layer's 512.
    pub fn forward(x: Tensor<f32, B, 784>, p: Net) -> Tensor<f32, B, 512> {
        let h = relu(matmul(x, p.hidden.w) + p.hidden.b);
        matmul(h, p.out.w) + p.out.b
    }
}

fn main() {}
