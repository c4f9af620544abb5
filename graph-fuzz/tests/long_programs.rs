//! Deep programs build (issue 11, item 8): `CHAIN_OPS` binary ops with literals, written by
//! `build.rs` once as one expression (`long_chain`) and once as one `let` per op
//! (`long_lets`), compile and compute what a plain loop computes, compiled and eager.

use grafo::prelude::*;

include!(concat!(env!("OUT_DIR"), "/long_programs.rs"));

/// The chains' steps, as `build.rs` writes them.
fn chain_ref(mut v: f32) -> f32 {
    for i in 0..CHAIN_OPS {
        v = match i % 4 {
            0 => v + 0.5,
            1 => v - 0.25,
            2 => v + 1.5,
            _ => v - 1.75,
        };
    }
    v
}

/// Both paths of one program give the loop's bits on a few inputs.
fn check(
    name: &str,
    compiled: fn(&Array1<f32>) -> Result<Array1<f32>, grafo::Error>,
    eager: fn(&Array1<f32>) -> Result<Array1<f32>, grafo::Error>,
) {
    let x = arr1(&[1.5f32, -2.0, 0.0, 100.0, -7.25, 1e-3, 42.0]);
    let want: Vec<f32> = x.iter().map(|&v| chain_ref(v)).collect();
    for (path, got) in [("compiled", compiled(&x)), ("eager", eager(&x))] {
        let got: Vec<f32> = got.unwrap().to_vec();
        assert_eq!(
            got.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
            want.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
            "{name} {path}: {got:?} vs {want:?}"
        );
    }
}

#[test]
fn long_chain_builds_and_runs() {
    check("chain", |x| long_chain(x), |x| long_chain::eager(x));
}

#[test]
fn long_lets_builds_and_runs() {
    check("lets", |x| long_lets(x), |x| long_lets::eager(x));
}
