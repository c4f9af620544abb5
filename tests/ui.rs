//! Compile-fail UI suite: every program in tests/ui/ must be rejected by `#[graph]` with the
//! message in its `.stderr` (regenerate with `TRYBUILD=overwrite cargo test --test ui`).

#[test]
fn ui() {
    let t = trybuild::TestCases::new();
    t.compile_fail("tests/ui/*.rs");
}
