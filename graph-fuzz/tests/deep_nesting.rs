//! Deep programs build (issue 11, item 8): a nested call `neg(abs(neg(..)))` `DEEP_NESTING` deep, written by `build.rs`, compiles and
//! computes what a plain loop computes, compiled and eager.

use grafo::prelude::*;

include!(concat!(env!("OUT_DIR"), "/deep_nesting.rs"));

fn nesting_ref(mut v: f32) -> f32 {
    // The innermost call is applied first: it is the last one written.
    for i in (0..DEEP_NESTING).rev() {
        v = if i % 2 == 0 { -v } else { v.abs() };
    }
    v
}

#[test]
fn a_deeply_nested_call_builds_and_runs() {
    let x = arr1(&[1.5f32, -2.0, 0.0, -0.0, f32::NAN, f32::NEG_INFINITY, 3.0]);
    let want: Vec<u32> = x.iter().map(|&v| nesting_ref(v).to_bits()).collect();
    for (path, got) in [
        ("compiled", deep_nesting(&x)),
        ("eager", deep_nesting::eager(&x)),
    ] {
        let got: Vec<u32> = got.unwrap().iter().map(|v| v.to_bits()).collect();
        assert_eq!(got, want, "{path}");
    }
}
