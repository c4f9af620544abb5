//! Independent fetches run concurrently with `inter_op_threads > 1`, and give the same results as run one after the other.

use grafo::prelude::*;

/// Two heavy, independent fetches sharing a prefix: `(f(x), g(x))`.
#[graph]
fn two_heads(
    x: Tensor<f32, B, 64>,
    w1: Tensor<f32, 64, 64>,
    w2: Tensor<f32, 64, 64>,
) -> (Tensor<f32, B, 64>, Tensor<f32, B, 64>) {
    let h = relu(x * 2.0 - 0.5);
    let f = tanh(matmul(h, w1));
    let g = softmax(matmul(h, w2) + h, -1);
    (f, g)
}

#[graph]
fn shares_everything(x: Tensor<f32, N>) -> (Tensor<f32, N>, Tensor<f32, N>) {
    let e = exp(x);
    (e, e + 1.0)
}

fn inputs() -> (Array2<f32>, Array2<f32>, Array2<f32>) {
    let x = Array2::from_shape_fn((300, 64), |(i, j)| ((i * 7 + j * 13) % 23) as f32 / 23.0);
    let w1 = Array2::from_shape_fn((64, 64), |(i, j)| ((i + 2 * j) % 11) as f32 / 40.0 - 0.1);
    let w2 = Array2::from_shape_fn((64, 64), |(i, j)| ((3 * i + j) % 7) as f32 / 30.0 - 0.1);
    (x, w1, w2)
}

#[test]
fn the_compiler_forks_independent_fetches() {
    let g = two_heads::graph();
    assert_eq!(g.outputs.len(), 2);
    let (x, w1, w2) = inputs();
    let plain = two_heads(&x, &w1, &w2).unwrap();
    let eager = two_heads::eager(&x, &w1, &w2).unwrap();
    for inter_op in [1, 2] {
        let mut s = Session::new(SessionConfig {
            intra_op_threads: 2,
            inter_op_threads: inter_op,
            ..Default::default()
        })
        .unwrap();
        for _ in 0..3 {
            let (f, gg) = two_heads::run(&mut s, &x, &w1, &w2).unwrap();
            assert_eq!(f, plain.0);
            assert_eq!(gg, plain.1);
            for (a, b) in f.iter().zip(eager.0.iter()) {
                assert!((a - b).abs() < 1e-5);
            }
        }
    }
}

#[test]
fn fetches_sharing_all_work_are_not_forked_and_still_right() {
    let x = arr1(&[0.0f32, 1.0, -1.0]);
    let mut s = Session::new(SessionConfig {
        inter_op_threads: 2,
        ..Default::default()
    })
    .unwrap();
    let (a, b) = shares_everything::run(&mut s, &x).unwrap();
    assert_eq!(b, &a + 1.0);
}
