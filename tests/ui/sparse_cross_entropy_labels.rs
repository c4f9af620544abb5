use grafo::prelude::*;

#[graph]
fn f(labels: Tensor<i32, B, 2>, logits: Tensor<f32, B, 10>) -> Tensor<f32, B> {
    sparse_softmax_cross_entropy_with_logits(labels, logits)
}

fn main() {}
