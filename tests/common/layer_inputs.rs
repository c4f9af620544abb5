//! Seeded f32 inputs and the bit-equality assertion shared by the layers' tests (`layers.rs`, `layers_sequence.rs`).
// Each test binary that includes this module uses some of the helpers, not all.
#![allow(dead_code)]

use grafo::ndarray::{ArrayD, IxDyn};

/// Deterministic values in [-1, 1) (a small LCG: the test needs no exact distribution).
pub fn values(n: usize, seed: u64) -> Vec<f32> {
    let mut s = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    (0..n)
        .map(|_| {
            s = s
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((s >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
        })
        .collect()
}

pub fn array<D: grafo::ndarray::Dimension>(
    shape: &[usize],
    seed: u64,
) -> grafo::ndarray::Array<f32, D> {
    let n = shape.iter().product();
    ArrayD::from_shape_vec(IxDyn(shape), values(n, seed))
        .unwrap()
        .into_dimensionality::<D>()
        .unwrap()
}

/// Asserts compiled and eager results are equal bit for bit.
pub fn assert_bits<D: grafo::ndarray::Dimension>(
    what: &str,
    a: &grafo::ndarray::Array<f32, D>,
    b: &grafo::ndarray::Array<f32, D>,
) {
    assert_eq!(a.shape(), b.shape(), "{what}: shape");
    assert!(
        a.iter()
            .zip(b.iter())
            .all(|(x, y)| x.to_bits() == y.to_bits()),
        "{what}: compiled {a} eager {b}"
    );
}
