//! Deep programs build (issue 11, item 8): `CHAIN_OPS` `let` statements of one op with a literal each, written by `build.rs`, compiles and
//! computes what a plain loop computes, compiled and eager.

use grafo::prelude::*;

include!(concat!(env!("OUT_DIR"), "/long_lets.rs"));

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

#[test]
fn long_lets_builds_and_runs() {
    let x = arr1(&[1.5f32, -2.0, 0.0, 100.0, -7.25, 1e-3, 42.0]);
    let want: Vec<f32> = x.iter().map(|&v| chain_ref(v)).collect();
    for (path, got) in [
        ("lets compiled", long_lets(&x)),
        ("lets eager", long_lets::eager(&x)),
    ] {
        let got: Vec<f32> = got.unwrap().to_vec();
        assert_eq!(
            got.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
            want.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
            "{path}: {got:?} vs {want:?}"
        );
    }
}
