//! First end-to-end check of the macro on W1 (GELU).

use grafo::prelude::*;

#[graph]
fn gelu(x: Tensor<f32, N>) -> Tensor<f32, N> {
    0.5 * x * (1.0 + tanh(0.7978845608 * (x + 0.044715 * x * x * x)))
}

#[test]
fn gelu_compiled_matches_eager() {
    let x = Array1::from_iter((0..1023).map(|i| (i as f32 - 500.0) / 100.0));
    let a = gelu(&x).unwrap();
    let b = gelu::eager(&x).unwrap();
    for i in 0..x.len() {
        let v = x[i] as f64;
        let r = 0.5 * v * (1.0 + (0.7978845608 * (v + 0.044715 * v * v * v)).tanh());
        assert!((a[i] as f64 - r).abs() < 1e-5, "{i}: {} vs {r}", a[i]);
        assert!((b[i] as f64 - r).abs() < 1e-5);
    }
    let g = gelu::graph();
    assert_eq!(g.groups_of("elementwise").len(), 1, "{:#?}", g.groups);
}
