//! The training workloads of WORKLOADS.md (W8: one Adam step of W2's MLP), shared by the tests and the benches.
// Each test binary that includes this module uses some of the workloads, not all.
#![allow(dead_code)]

use grafo::prelude::*;

/// W8: W2's perceptron, mean sparse softmax cross-entropy, gradients, and one Adam step
/// (lr 1e-3, 0.9, 0.999, 1e-8) on each of w1 b1 w2 b2; `t` is the step, counted from 1.
/// Returns the loss, then each parameter's new value, new `m` and new `v`.
#[graph]
#[allow(clippy::type_complexity, clippy::too_many_arguments)]
pub fn mlp_train_step(
    x: Tensor<f32, B, 784>,
    labels: Tensor<i32, B>,
    w1: Tensor<f32, 784, 512>,
    b1: Tensor<f32, 512>,
    w2: Tensor<f32, 512, 10>,
    b2: Tensor<f32, 10>,
    mw1: Tensor<f32, 784, 512>,
    mb1: Tensor<f32, 512>,
    mw2: Tensor<f32, 512, 10>,
    mb2: Tensor<f32, 10>,
    vw1: Tensor<f32, 784, 512>,
    vb1: Tensor<f32, 512>,
    vw2: Tensor<f32, 512, 10>,
    vb2: Tensor<f32, 10>,
    t: f32,
) -> (
    Tensor<f32>,
    (
        Tensor<f32, 784, 512>,
        Tensor<f32, 784, 512>,
        Tensor<f32, 784, 512>,
    ),
    (Tensor<f32, 512>, Tensor<f32, 512>, Tensor<f32, 512>),
    (
        Tensor<f32, 512, 10>,
        Tensor<f32, 512, 10>,
        Tensor<f32, 512, 10>,
    ),
    (Tensor<f32, 10>, Tensor<f32, 10>, Tensor<f32, 10>),
) {
    let h = relu(matmul(x, w1) + b1);
    let logits = matmul(h, w2) + b2;
    let loss = reduce_mean(sparse_softmax_cross_entropy_with_logits(labels, logits));
    let (gw1, gb1, gw2, gb2) = gradients(loss, (w1, b1, w2, b2));
    let (b1t, b2t) = (pow(0.9, t), pow(0.999, t));
    (
        loss,
        apply_adam(w1, mw1, vw1, b1t, b2t, 0.001, 0.9, 0.999, 1e-8, gw1),
        apply_adam(b1, mb1, vb1, b1t, b2t, 0.001, 0.9, 0.999, 1e-8, gb1),
        apply_adam(w2, mw2, vw2, b1t, b2t, 0.001, 0.9, 0.999, 1e-8, gw2),
        apply_adam(b2, mb2, vb2, b1t, b2t, 0.001, 0.9, 0.999, 1e-8, gb2),
    )
}
