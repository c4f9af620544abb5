use grafo::prelude::*;

#[graph]
mod stack {
    pub struct Block {
        pub w: Tensor<f32, 4, 4>,
    }
    pub struct Stack {
        pub blocks: [Block; 2],
    }

    pub fn run(x: Tensor<f32, B, 4>, s: Stack) -> Tensor<f32, B, 4> {
        let mut h = x;
        for i in 0..3 {
            h = tanh(matmul(h, s.blocks[i].w));
        }
        h
    }

    pub fn run_host(x: Tensor<f32, B, 4>, s: Stack, n: usize) -> Tensor<f32, B, 4> {
        matmul(x, s.blocks[n].w)
    }

    pub fn not_an_array(x: Tensor<f32, B, 4>, s: Stack) -> Tensor<f32, B, 4> {
        matmul(x, s.blocks.w)
    }
}

fn main() {}
