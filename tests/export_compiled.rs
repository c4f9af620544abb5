//! The graphs the macro emits, exported for the real clients: `dot -Tsvg` renders them (W3, W2 and W9's train step with its roles and saved values) and TensorBoard's reader loads them.
//!
//! Both tests need the external tools and are ignored by a plain `cargo test`: run
//! `.ci/install-tools`, then `cargo test --test export_compiled -- --ignored` (as `.ci/run` does).

#[path = "common/external_tools.rs"]
mod external_tools;

use external_tools::{require_graphviz, require_tensorboard, venv_python};

#[path = "common/workloads.rs"]
mod workloads;

#[path = "common/training.rs"]
mod training;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use workloads::{convnet, mlp};

#[test]
#[ignore = "needs Graphviz's dot: run .ci/install-tools, then cargo test --test export_compiled -- --ignored"]
fn dot_of_compiled_graphs_renders() {
    require_graphviz();
    let train_step = training::cnn_train_step::graph().to_dot();
    assert!(
        train_step.contains("saved"),
        "a train step marks the forward values its backward pass saves"
    );
    for dot in [convnet::graph().to_dot(), mlp::graph().to_dot(), train_step] {
        assert!(
            dot.contains("cluster_"),
            "fusion groups and cond arms are clusters"
        );
        let mut child = Command::new("dot")
            .arg("-Tsvg")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("dot starts");
        child
            .stdin
            .take()
            .expect("stdin")
            .write_all(dot.as_bytes())
            .expect("dot reads");
        let out = child.wait_with_output().expect("dot finishes");
        assert!(
            out.status.success(),
            "dot failed: {}\n{dot}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(String::from_utf8_lossy(&out.stdout).contains("<svg"));
    }
}

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "grafo-export-compiled-{name}-{}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

#[test]
#[ignore = "needs the TensorBoard venv: run .ci/install-tools, then cargo test --test export_compiled -- --ignored"]
fn tensorboard_reads_compiled_graphs() {
    let python = venv_python();
    require_tensorboard();
    let g = convnet::graph();
    let dir = temp_dir("w3");
    let path = g.write_tensorboard(&dir).expect("event file written");
    let conv_count = g.nodes.iter().filter(|n| n.op == "conv2d").count();
    assert_eq!(conv_count, 2);
    let expected = format!(
        r#"{{"node_count": {}, "nodes": {{
            "x": {{"op": "input", "shape": ["B", "H", "W", 3]}},
            "k0": {{"op": "input", "shape": [3, 3, 3, 16]}},
            "limit": {{"op": "input", "shape": []}}
        }}}}"#,
        g.nodes.len()
    );
    check_with_tensorboard(&python, &path, &expected, "the W3 graph");
}

/// Runs `scripts/check_tensorboard.py` on the event file at `path` and fails the test with
/// its report unless the file matches `expected`.
fn check_with_tensorboard(python: &Path, path: &Path, expected: &str, what: &str) {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/check_tensorboard.py");
    let out = Command::new(python)
        .arg(script)
        .arg(path)
        .arg(expected)
        .output()
        .expect("python runs");
    assert!(
        out.status.success(),
        "TensorBoard rejected {what}:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
#[ignore = "needs the TensorBoard venv: run .ci/install-tools, then cargo test --test export_compiled -- --ignored"]
fn tensorboard_reads_a_train_step_with_its_roles() {
    let python = venv_python();
    require_tensorboard();
    let g = training::cnn_train_step::graph();
    let count = |role: &str| g.nodes.iter().filter(|n| n.role.name() == role).count();
    let (forward, backward, update) = (count("forward"), count("backward"), count("update"));
    let saved = g.nodes.iter().filter(|n| n.saved).count();
    // A train step has all three parts, and its backward pass reads saved forward values.
    assert!(forward > 0 && backward > 0 && update > 0 && saved > 0);
    let dir = temp_dir("w9");
    let path = g.write_tensorboard(&dir).expect("event file written");
    // TensorBoard's readers must see every node's role, the saved values, and the backward
    // and update nodes in the `gradients/` and `update/` boxes of the Graphs tab.
    let expected = format!(
        r#"{{"node_count": {}, "roles": {{"forward": {forward}, "backward": {backward}, "update": {update}}},
            "saved": {saved}, "scopes": {{"gradients/": {backward}, "update/": {update}}}}}"#,
        g.nodes.len()
    );
    check_with_tensorboard(&python, &path, &expected, "the W9 train step's graph");
}
