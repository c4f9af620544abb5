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

/// W8 with its parameters and Adam's state updated in place (`&mut`), as a training loop runs
/// it: the step returns only the loss, and a `Session` run allocates nothing else.
#[graph]
#[allow(clippy::too_many_arguments)]
pub fn mlp_train_step_in_place(
    x: Tensor<f32, B, 784>,
    labels: Tensor<i32, B>,
    w1: &mut Tensor<f32, 784, 512>,
    b1: &mut Tensor<f32, 512>,
    w2: &mut Tensor<f32, 512, 10>,
    b2: &mut Tensor<f32, 10>,
    mw1: &mut Tensor<f32, 784, 512>,
    mb1: &mut Tensor<f32, 512>,
    mw2: &mut Tensor<f32, 512, 10>,
    mb2: &mut Tensor<f32, 10>,
    vw1: &mut Tensor<f32, 784, 512>,
    vb1: &mut Tensor<f32, 512>,
    vw2: &mut Tensor<f32, 512, 10>,
    vb2: &mut Tensor<f32, 10>,
    t: f32,
) -> Tensor<f32> {
    let h = relu(matmul(x, w1) + b1);
    let logits = matmul(h, w2) + b2;
    let loss = reduce_mean(sparse_softmax_cross_entropy_with_logits(labels, logits));
    let (gw1, gb1, gw2, gb2) = gradients(loss, (w1, b1, w2, b2));
    let (b1t, b2t) = (pow(0.9, t), pow(0.999, t));
    (w1, mw1, vw1) = apply_adam(w1, mw1, vw1, b1t, b2t, 0.001, 0.9, 0.999, 1e-8, gw1);
    (b1, mb1, vb1) = apply_adam(b1, mb1, vb1, b1t, b2t, 0.001, 0.9, 0.999, 1e-8, gb1);
    (w2, mw2, vw2) = apply_adam(w2, mw2, vw2, b1t, b2t, 0.001, 0.9, 0.999, 1e-8, gw2);
    (b2, mb2, vb2) = apply_adam(b2, mb2, vb2, b1t, b2t, 0.001, 0.9, 0.999, 1e-8, gb2);
    loss
}

/// W9: one Adam step of W7's CNN (NHWC 28x28x1: conv 3x3 32 VALID, relu, max pool 2, conv
/// 3x3 64 VALID, relu, max pool 2, flatten, dense 1600 -> 10), mean sparse softmax
/// cross-entropy, Adam (lr 1e-3, 0.9, 0.999, 1e-8) on the six parameters in place; `t` is the
/// step, counted from 1. Returns the loss.
#[graph]
#[allow(clippy::too_many_arguments)]
pub fn cnn_train_step(
    x: Tensor<f32, B, 28, 28, 1>,
    labels: Tensor<i32, B>,
    k1: &mut Tensor<f32, 3, 3, 1, 32>,
    c1: &mut Tensor<f32, 32>,
    k2: &mut Tensor<f32, 3, 3, 32, 64>,
    c2: &mut Tensor<f32, 64>,
    w: &mut Tensor<f32, 1600, 10>,
    c: &mut Tensor<f32, 10>,
    mk1: &mut Tensor<f32, 3, 3, 1, 32>,
    mc1: &mut Tensor<f32, 32>,
    mk2: &mut Tensor<f32, 3, 3, 32, 64>,
    mc2: &mut Tensor<f32, 64>,
    mw: &mut Tensor<f32, 1600, 10>,
    mc: &mut Tensor<f32, 10>,
    vk1: &mut Tensor<f32, 3, 3, 1, 32>,
    vc1: &mut Tensor<f32, 32>,
    vk2: &mut Tensor<f32, 3, 3, 32, 64>,
    vc2: &mut Tensor<f32, 64>,
    vw: &mut Tensor<f32, 1600, 10>,
    vc: &mut Tensor<f32, 10>,
    t: f32,
) -> Tensor<f32> {
    let y = max_pool2d(relu(conv2d(x, k1, 1, VALID) + c1), 2, 2, VALID);
    let y = max_pool2d(relu(conv2d(y, k2, 1, VALID) + c2), 2, 2, VALID);
    let logits = matmul(reshape(y, [B, 1600]), w) + c;
    let loss = reduce_mean(sparse_softmax_cross_entropy_with_logits(labels, logits));
    let (gk1, gc1, gk2, gc2, gw, gc) = gradients(loss, (k1, c1, k2, c2, w, c));
    let (b1t, b2t) = (pow(0.9, t), pow(0.999, t));
    (k1, mk1, vk1) = apply_adam(k1, mk1, vk1, b1t, b2t, 0.001, 0.9, 0.999, 1e-8, gk1);
    (c1, mc1, vc1) = apply_adam(c1, mc1, vc1, b1t, b2t, 0.001, 0.9, 0.999, 1e-8, gc1);
    (k2, mk2, vk2) = apply_adam(k2, mk2, vk2, b1t, b2t, 0.001, 0.9, 0.999, 1e-8, gk2);
    (c2, mc2, vc2) = apply_adam(c2, mc2, vc2, b1t, b2t, 0.001, 0.9, 0.999, 1e-8, gc2);
    (w, mw, vw) = apply_adam(w, mw, vw, b1t, b2t, 0.001, 0.9, 0.999, 1e-8, gw);
    (c, mc, vc) = apply_adam(c, mc, vc, b1t, b2t, 0.001, 0.9, 0.999, 1e-8, gc);
    loss
}
