//! The external tools the export tests check grafo's files with (Graphviz, TensorBoard), installed by `.ci/install-tools`.

// Each test binary that includes this module uses some of it, not all.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// The Python of the venv that `.ci/install-tools` fills with TensorBoard.
pub fn venv_python() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(".venv/bin/python")
}

/// Whether Graphviz's `dot` runs; fails the test when it is missing, unless skipping is asked for.
pub fn graphviz_available() -> bool {
    let ok = Command::new("dot")
        .arg("-V")
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    require_tool(ok, "Graphviz's `dot`")
}

/// Whether the venv's TensorBoard imports; fails the test when it is missing, unless skipping is asked for.
pub fn tensorboard_available() -> bool {
    let ok = Command::new(venv_python())
        .args(["-c", "import tensorboard"])
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    require_tool(ok, "the TensorBoard venv (.venv)")
}

/// Whether an external tool may be missing; when it may not, fails the test with what to run.
fn require_tool(available: bool, what: &str) -> bool {
    if available {
        return true;
    }
    let skip = std::env::var("GRAFO_SKIP_EXTERNAL_TOOLS").is_ok_and(|v| v == "1");
    assert!(skip, "{what} is missing: run `.ci/install-tools` (or set GRAFO_SKIP_EXTERNAL_TOOLS=1 to skip this check)");
    eprintln!("skipping: {what} is missing and GRAFO_SKIP_EXTERNAL_TOOLS=1");
    false
}
