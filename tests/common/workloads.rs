//! The five workloads of WORKLOADS.md as `#[graph]` functions, shared by the tests and the benches.
// Each test binary that includes this module uses some of the workloads, not all.
#![allow(dead_code)]

use grafo::prelude::*;

/// W1: GELU (tanh form) over a vector.
#[graph]
pub fn gelu(x: Tensor<f32, N>) -> Tensor<f32, N> {
    0.5 * x * (1.0 + tanh(0.7978845608 * (x + 0.044715 * x * x * x)))
}

/// W2: a two-layer MLP with a softmax head.
#[graph]
pub fn mlp(
    x: Tensor<f32, B, 784>,
    w1: Tensor<f32, 784, 512>,
    b1: Tensor<f32, 512>,
    w2: Tensor<f32, 512, 10>,
    b2: Tensor<f32, 10>,
) -> Tensor<f32, B, 10> {
    let h = relu(matmul(x, w1) + b1);
    softmax(matmul(h, w2) + b2, -1)
}

/// W3: the eager tutorial's network, the second conv only while the L2 norm is below `limit`.
#[graph]
pub fn convnet(
    x: Tensor<f32, B, H, W, 3>,
    k0: Tensor<f32, 3, 3, 3, 16>,
    b0: Tensor<f32, 16>,
    k1: Tensor<f32, 3, 3, 16, 16>,
    b1: Tensor<f32, 16>,
    limit: Tensor<f32>,
) -> Tensor<f32, B, H, W, 16> {
    let mut y = conv2d(x, k0, 1, SAME) + b0;
    if norm(y) < limit {
        y = conv2d(y, k1, 1, SAME) + b1;
    }
    y
}

/// W4: row-wise layer normalisation.
#[graph]
pub fn layernorm(
    x: Tensor<f32, N, 1024>,
    gamma: Tensor<f32, 1024>,
    beta: Tensor<f32, 1024>,
) -> Tensor<f32, N, 1024> {
    let mean = reduce_mean(x, -1, true);
    let d = x - mean;
    let var = reduce_mean(d * d, -1, true);
    d / sqrt(var + 1e-5) * gamma + beta
}

/// W5: the Session tutorial's `a + b` on i32 scalars.
#[graph]
pub fn suma(a: Tensor<i32>, b: Tensor<i32>) -> Tensor<i32> {
    a + b
}

/// W5: the Session tutorial's two fetches `(x * y, y / x)` on f32 scalars.
#[graph]
pub fn two_fetches(x: Tensor<f32>, y: Tensor<f32>) -> (Tensor<f32>, Tensor<f32>) {
    (x * y, y / x)
}
