//! The external tools the export tests check grafo's files with (Graphviz, TensorBoard), installed by `.ci/install-tools`.
//!
//! The tests that need them are `#[ignore]`d, so `cargo test` passes with only the Rust
//! toolchain; `.ci/run` installs the tools and runs them with `-- --ignored`. Run that way, a
//! missing tool fails the test with what to run: an opt-in check never passes by skipping.

// Each test binary that includes this module uses some of it, not all.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// The Python of the venv that `.ci/install-tools` fills with TensorBoard.
pub fn venv_python() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(".venv/bin/python")
}

/// Fails the test, saying what to run, unless Graphviz's `dot` runs.
pub fn require_graphviz() {
    let ok = Command::new("dot")
        .arg("-V")
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    assert!(
        ok,
        "Graphviz's `dot` is missing: run `.ci/install-tools` first"
    );
}

/// Fails the test, saying what to run, unless the venv's TensorBoard imports.
pub fn require_tensorboard() {
    let ok = Command::new(venv_python())
        .args(["-c", "import tensorboard"])
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    assert!(
        ok,
        "the TensorBoard venv ({}) is missing: run `.ci/install-tools` first",
        venv_python().display()
    );
}
