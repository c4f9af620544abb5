//! Graph exports checked against their real consumers: Graphviz's `dot` renders every DOT, and TensorBoard's own reader loads every event file.
//!
//! The graphs are built by hand here, so these tests do not depend on the macro. The tests
//! that need the external tools are ignored by a plain `cargo test`: run `.ci/install-tools`,
//! then `cargo test --test export -- --ignored` (as `.ci/run` does); a missing tool then fails
//! the test and says so.

#[path = "common/external_tools.rs"]
mod external_tools;

use external_tools::{require_graphviz, require_tensorboard, venv_python};

use graph_runtime::tensorboard::{proto, read_event_file, read_records, EventWriter};
use graph_runtime::{CondDef, DType, Dim, GraphDef, GroupDef, InputDef, NodeDef, Region, Role};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

const THEN0: Region = Region::CondArm {
    cond: 0,
    then_arm: true,
};
const ELSE0: Region = Region::CondArm {
    cond: 0,
    then_arm: false,
};
const THEN1: Region = Region::CondArm {
    cond: 1,
    then_arm: true,
};

fn b() -> Dim {
    Dim::Symbol("B".to_string())
}

#[allow(clippy::too_many_arguments)]
fn node(
    id: usize,
    name: &str,
    op: &str,
    inputs: &[usize],
    dtype: DType,
    shape: Vec<Dim>,
    region: Region,
    group: Option<usize>,
) -> NodeDef {
    NodeDef {
        id,
        name: name.to_string(),
        op: op.to_string(),
        inputs: inputs.to_vec(),
        dtype,
        shape,
        line: 10 + id as u32,
        attrs: Vec::new(),
        region,
        group,
        role: Role::Forward,
        saved: false,
    }
}

fn group(id: usize, kind: &str, nodes: &[usize], region: Region) -> GroupDef {
    GroupDef {
        id,
        kind: kind.to_string(),
        nodes: nodes.to_vec(),
        output: *nodes.last().unwrap_or(&0),
        buffer: Some(id),
        in_place: false,
        region,
        records_for: None,
    }
}

/// A small convnet-like graph: `h = relu(matmul(x, w) + b)` in one fused group, then
/// `if norm(h) < limit { y = relu(h * 2); if norm(h) > limit { y = exp(y) } } else { y = -h }`,
/// so a cond nests inside another cond's arm and fusion groups sit inside arms.
fn sample() -> GraphDef {
    use DType::{Bool, F32};
    use Region::Main;
    let s = |dims: &[usize]| dims.iter().map(|&d| Dim::Static(d)).collect::<Vec<_>>();
    let bx = |d: usize| vec![b(), Dim::Static(d)];
    let mut nodes = vec![
        node(0, "x", "input", &[], F32, bx(4), Main, None),
        node(1, "w", "input", &[], F32, s(&[4, 3]), Main, None),
        node(2, "b", "input", &[], F32, s(&[3]), Main, None),
        node(3, "limit", "input", &[], F32, vec![], Main, None),
        node(4, "matmul_4", "matmul", &[0, 1], F32, bx(3), Main, Some(0)),
        node(5, "h", "add", &[4, 2], F32, bx(3), Main, Some(0)),
        node(6, "h", "relu", &[5], F32, bx(3), Main, Some(0)),
        node(7, "n", "norm", &[6], F32, vec![], Main, Some(1)),
        node(8, "less_8", "less", &[7, 3], Bool, vec![], Main, Some(2)),
        node(9, "y", "cond", &[8], F32, bx(3), Main, None),
        node(10, "mul_10", "mul", &[6], F32, bx(3), THEN0, Some(3)),
        node(11, "y", "relu", &[10], F32, bx(3), THEN0, Some(3)),
        node(12, "y", "neg", &[6], F32, bx(3), ELSE0, Some(4)),
        node(
            13,
            "greater_13",
            "greater",
            &[7, 3],
            Bool,
            vec![],
            THEN0,
            Some(5),
        ),
        node(14, "y", "cond", &[13], F32, bx(3), THEN0, None),
        node(15, "y", "exp", &[11], F32, bx(3), THEN1, Some(6)),
    ];
    nodes[10].attrs.push(("rhs".to_string(), "2.0".to_string()));
    GraphDef {
        name: "convnet_small".to_string(),
        inputs: ["x", "w", "b", "limit"]
            .iter()
            .enumerate()
            .map(|(i, name)| InputDef {
                name: name.to_string(),
                dtype: Some(F32),
                shape: nodes[i].shape.clone(),
                node: Some(i),
                written_from: None,
            })
            .collect(),
        nodes,
        conds: vec![
            CondDef {
                id: 0,
                predicate: 8,
                outputs: vec![("y".to_string(), 14, 12)],
                node: 9,
            },
            CondDef {
                id: 1,
                predicate: 13,
                outputs: vec![("y".to_string(), 15, 11)],
                node: 14,
            },
        ],
        groups: vec![
            group(0, "matmul", &[4, 5, 6], Main),
            group(1, "reduce", &[7], Main),
            group(2, "scalar", &[8], Main),
            group(3, "elementwise", &[10, 11], THEN0),
            group(4, "elementwise", &[12], ELSE0),
            group(5, "scalar", &[13], THEN0),
            group(6, "elementwise", &[15], THEN1),
        ],
        schedule: vec![0, 1, 2, 3, 5, 6, 4],
        buffers: Vec::new(),
        outputs: vec![9],
        passes: vec!["fuse".to_string()],
    }
}

/// A graph whose names need escaping in DOT and cleaning in TensorFlow names.
fn awkward() -> GraphDef {
    let mut g = GraphDef {
        name: "quote\"d \\ graph".to_string(),
        inputs: Vec::new(),
        nodes: vec![
            node(
                0,
                "say \"hi\"",
                "input",
                &[],
                DType::I64,
                vec![Dim::Expr("H - 2".to_string())],
                Region::Main,
                None,
            ),
            node(
                1,
                "back\\slash",
                "abs",
                &[0],
                DType::I64,
                vec![Dim::Expr("H - 2".to_string())],
                Region::Main,
                Some(0),
            ),
        ],
        conds: Vec::new(),
        groups: vec![group(0, "element\"wise", &[1], Region::Main)],
        schedule: vec![0],
        buffers: Vec::new(),
        outputs: vec![1],
        passes: Vec::new(),
    };
    g.groups[0].in_place = true;
    g
}

fn empty() -> GraphDef {
    GraphDef {
        name: "empty".to_string(),
        inputs: Vec::new(),
        nodes: Vec::new(),
        conds: Vec::new(),
        groups: Vec::new(),
        schedule: Vec::new(),
        buffers: Vec::new(),
        outputs: Vec::new(),
        passes: Vec::new(),
    }
}

/// For each `nN [` node line and `subgraph NAME {` line, the chain of clusters around it.
fn cluster_chain(dot: &str, item: &str) -> Option<Vec<String>> {
    let mut stack: Vec<String> = Vec::new();
    for line in dot.lines().map(str::trim) {
        if let Some(rest) = line.strip_prefix("subgraph ") {
            let name = rest.trim_end_matches('{').trim().to_string();
            if name == item {
                return Some(stack);
            }
            stack.push(name);
        } else if line == "}" {
            stack.pop();
        } else if line.starts_with(&format!("{item} [")) {
            return Some(stack);
        }
    }
    None
}

#[test]
fn dot_has_clusters_nested_as_the_regions() {
    let dot = sample().to_dot();
    assert!(dot.starts_with("digraph \"convnet_small\" {"), "{dot}");
    let chain = |item: &str| {
        cluster_chain(&dot, item).unwrap_or_else(|| panic!("{item} missing in\n{dot}"))
    };
    assert_eq!(chain("cluster_g0"), Vec::<String>::new());
    assert_eq!(chain("cluster_cond0_then"), Vec::<String>::new());
    assert_eq!(chain("cluster_cond0_else"), Vec::<String>::new());
    assert_eq!(chain("cluster_g3"), ["cluster_cond0_then"]);
    assert_eq!(chain("cluster_cond1_then"), ["cluster_cond0_then"]);
    assert_eq!(
        chain("cluster_g6"),
        ["cluster_cond0_then", "cluster_cond1_then"]
    );
    assert_eq!(
        chain("n15"),
        ["cluster_cond0_then", "cluster_cond1_then", "cluster_g6"]
    );
    assert_eq!(chain("n14"), ["cluster_cond0_then"]);
    assert_eq!(chain("n12"), ["cluster_cond0_else", "cluster_g4"]);
    assert_eq!(chain("n5"), ["cluster_g0"]);
    assert_eq!(chain("n0"), Vec::<String>::new());
    // The arm of cond 1 that holds no node is not drawn.
    assert!(!dot.contains("cluster_cond1_else"), "{dot}");
    assert!(dot.contains("label=\"matmul group 0\""), "{dot}");
    assert!(dot.contains("label=\"cond 0: then\""), "{dot}");
    // Every node is declared exactly once.
    for i in 0..16 {
        let declared = dot
            .lines()
            .filter(|l| l.trim_start().starts_with(&format!("n{i} [")))
            .count();
        assert_eq!(declared, 1, "n{i} in\n{dot}");
    }
}

#[test]
fn dot_labels_nodes_and_edges_with_dtype_and_shape() {
    let dot = sample().to_dot();
    assert!(dot.contains("n0 -> n4 [label=\"f32[B, 4]\"];"), "{dot}");
    assert!(dot.contains("n4 -> n5 [label=\"f32[B, 3]\"];"), "{dot}");
    assert!(dot.contains("n7 -> n8 [label=\"f32[]\"];"), "{dot}");
    assert!(dot.contains("n8 -> n9 [label=\"bool[]\"];"), "{dot}");
    assert!(
        dot.contains("n14 -> n9 [label=\"then: y\\nf32[B, 3]\", style=dashed];"),
        "{dot}"
    );
    assert!(
        dot.contains("n12 -> n9 [label=\"else: y\\nf32[B, 3]\", style=dashed];"),
        "{dot}"
    );
    assert!(
        dot.contains("n5 [label=\"h\\nadd\\nf32[B, 3]\\nline 15\"];"),
        "{dot}"
    );
    assert!(dot.contains("n9 [label=\"y\\ncond\\nf32[B, 3]\\nline 19\", shape=diamond, style=solid, peripheries=2];"), "{dot}");
}

#[test]
fn dot_escapes_quotes_and_backslashes_and_is_deterministic() {
    let dot = awkward().to_dot();
    assert!(
        dot.starts_with("digraph \"quote\\\"d \\\\ graph\" {"),
        "{dot}"
    );
    assert!(
        dot.contains("n0 [label=\"say \\\"hi\\\"\\ninput\\ni64[H - 2]\\nline 10\""),
        "{dot}"
    );
    assert!(dot.contains("n1 [label=\"back\\\\slash\\nabs"), "{dot}");
    assert!(
        dot.contains("label=\"element\\\"wise group 0 (in place)\""),
        "{dot}"
    );
    assert_eq!(sample().to_dot(), sample().to_dot());
    let empty_dot = concat!(
        "digraph \"empty\" {\n",
        "  graph [label=\"graph empty\", labelloc=t, fontname=\"Helvetica\", compound=true];\n",
        "  node [shape=box, style=rounded, fontname=\"Helvetica\", fontsize=10];\n",
        "  edge [fontname=\"Helvetica\", fontsize=9];\n",
        "}\n",
    );
    assert_eq!(empty().to_dot(), empty_dot);
}

#[test]
#[ignore = "needs Graphviz's dot: run .ci/install-tools, then cargo test --test export -- --ignored"]
fn graphviz_renders_every_exported_dot() {
    require_graphviz();
    for graph in [sample(), awkward(), empty()] {
        let mut child = Command::new("dot")
            .arg("-Tsvg")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("dot starts");
        {
            use std::io::Write;
            let mut stdin = child.stdin.take().expect("dot's stdin");
            stdin
                .write_all(graph.to_dot().as_bytes())
                .expect("dot reads the graph");
        }
        let out = child.wait_with_output().expect("dot finishes");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            out.status.success(),
            "dot -Tsvg failed on {}: {stderr}\n{}",
            graph.name,
            graph.to_dot()
        );
        assert!(
            stderr.trim().is_empty(),
            "dot warned on {}: {stderr}",
            graph.name
        );
        assert!(
            String::from_utf8_lossy(&out.stdout).contains("<svg"),
            "no SVG for {}",
            graph.name
        );
    }
}

/// A fresh directory under the system's temp dir for one test.
fn temp_dir(test: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("grafo-{test}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

#[test]
fn event_file_decodes_back_in_rust() {
    let dir = temp_dir("tb-rust");
    let path = sample()
        .write_tensorboard(&dir)
        .expect("event file written");
    let file_name = path
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or_default()
        .to_string();
    assert!(file_name.starts_with("events.out.tfevents."), "{file_name}");
    assert!(file_name.ends_with(".convnet_small"), "{file_name}");
    assert_eq!(path.parent(), Some(dir.as_path()));

    let bytes = std::fs::read(&path).expect("event file read");
    let records = read_records(&bytes).expect("framing and CRCs valid");
    assert_eq!(records.len(), 2);
    let mut corrupt = bytes.clone();
    let last = corrupt.len() - 6;
    corrupt[last] ^= 0x40;
    assert!(
        read_records(&corrupt).is_err(),
        "a flipped bit must fail the data CRC"
    );

    let events = read_event_file(&path).expect("events decode");
    assert_eq!(
        events[0].what,
        Some(proto::What::FileVersion("brain.Event:2".to_string()))
    );
    assert!(events[0].wall_time > 1.0e9);
    let Some(proto::What::GraphDef(graph_bytes)) = &events[1].what else {
        panic!("second event has no graph_def: {:?}", events[1]);
    };
    let graph = proto::GraphDef::from_bytes(graph_bytes).expect("GraphDef decodes");
    assert_eq!(graph, sample().to_tensorflow());
    let names: Vec<&str> = graph.node.iter().map(|n| n.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "x",
            "w",
            "b",
            "limit",
            "matmul_4",
            "h",
            "h_1",
            "n",
            "less_8",
            "y",
            "cond0/then/mul_10",
            "cond0/then/y",
            "cond0/else/y",
            "cond0/then/greater_13",
            "cond0/then/y_1",
            "cond0/then/cond1/then/y",
        ]
    );
    let x = &graph.node[0];
    assert_eq!(x.op, "input");
    let Some(proto::Value::List(shapes)) = &x.attr["_output_shapes"].value else {
        panic!("x has no _output_shapes: {x:?}");
    };
    let dims: Vec<(i64, &str)> = shapes.shape[0]
        .dim
        .iter()
        .map(|d| (d.size, d.name.as_str()))
        .collect();
    assert_eq!(dims, [(-1, "B"), (4, "")]);
    assert_eq!(x.attr["T"].value, Some(proto::Value::Type(1)));
    assert_eq!(x.attr["line"].value, Some(proto::Value::I(10)));
    let cond = &graph.node[9];
    assert_eq!(cond.input, ["less_8", "cond0/then/y_1", "cond0/else/y"]);
    assert_eq!(
        graph.node[10].attr["rhs"].value,
        Some(proto::Value::S(b"2.0".to_vec()))
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// Runs `scripts/check_tensorboard.py` on `file`.
fn run_checker(file: &Path, expected: &str) -> std::process::Output {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/check_tensorboard.py");
    Command::new(venv_python())
        .arg(script)
        .arg(file)
        .arg(expected)
        .output()
        .expect("the venv's python starts")
}

/// Runs `scripts/check_tensorboard.py` on `file` and fails the test with its report.
fn check_with_tensorboard(file: &Path, expected: &str) {
    let out = run_checker(file, expected);
    assert!(
        out.status.success(),
        "TensorBoard's reader rejected {}:\n{}{}",
        file.display(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
#[ignore = "needs the TensorBoard venv: run .ci/install-tools, then cargo test --test export -- --ignored"]
fn tensorboard_reads_the_event_file() {
    require_tensorboard();
    let dir = temp_dir("tb-python");
    let path = sample()
        .write_tensorboard(&dir)
        .expect("event file written");
    let expected = r#"{
        "node_count": 16,
        "nodes": {
            "x": {"op": "input", "shape": ["B", 4], "dtype": 1, "attrs": {"line": 10}},
            "limit": {"op": "input", "shape": []},
            "matmul_4": {"op": "matmul", "shape": ["B", 3], "inputs": ["x", "w"],
                         "attrs": {"fusion_group": "matmul group 0"}},
            "h_1": {"op": "relu", "shape": ["B", 3], "inputs": ["h"]},
            "less_8": {"op": "less", "shape": [], "dtype": 10},
            "y": {"op": "cond", "shape": ["B", 3], "inputs": ["less_8", "cond0/then/y_1", "cond0/else/y"]},
            "cond0/then/mul_10": {"op": "mul", "attrs": {"rhs": "2.0"}},
            "cond0/else/y": {"op": "neg", "shape": ["B", 3]},
            "cond0/then/cond1/then/y": {"op": "exp", "shape": ["B", 3], "inputs": ["cond0/then/y"]}
        }
    }"#;
    check_with_tensorboard(&path, expected);
    // The checker itself must notice a difference.
    let out = run_checker(
        &path,
        r#"{"nodes": {"x": {"op": "placeholder", "shape": [4]}, "nope": {}}}"#,
    );
    let report = String::from_utf8_lossy(&out.stdout);
    assert!(
        !out.status.success(),
        "checker accepted a wrong expectation"
    );
    assert!(
        report.contains("x: op is 'input', expected 'placeholder'"),
        "{report}"
    );
    assert!(
        report.contains("x: _output_shapes is [['B', 4]], expected [[4]]"),
        "{report}"
    );
    assert!(report.contains("node 'nope' missing"), "{report}");

    let dir2 = temp_dir("tb-python-awkward");
    let path = awkward()
        .write_tensorboard(&dir2)
        .expect("event file written");
    check_with_tensorboard(
        &path,
        r#"{"nodes": {"say__hi_": {"op": "input", "shape": ["H - 2"], "dtype": 9}, "back_slash": {"op": "abs"}}}"#,
    );
    let path = empty()
        .write_tensorboard(&dir2)
        .expect("event file written");
    check_with_tensorboard(&path, r#"{"node_count": 0}"#);
    let _ = std::fs::remove_dir_all(&dir);
    let _ = std::fs::remove_dir_all(&dir2);
}

#[test]
#[ignore = "needs the TensorBoard venv: run .ci/install-tools, then cargo test --test export -- --ignored"]
fn tensorboard_reads_the_scalars() {
    require_tensorboard();
    let dir = temp_dir("tb-python-scalars");
    let mut writer = EventWriter::new(&dir).expect("writer created");
    for (step, loss) in [(0, 2.25f32), (1, 1.5), (5, 0.125), (1 << 33, 1e-30)] {
        writer
            .add_scalar("train/loss", step, loss)
            .expect("scalar written");
    }
    writer
        .add_scalar("held_out/accuracy", 5, 0.9625)
        .expect("scalar written");
    writer
        .add_scalar("held_out/accuracy", 9, f32::NAN)
        .expect("scalar written");
    writer.flush().expect("flushed");
    check_with_tensorboard(
        writer.path(),
        r#"{"scalars": {
            "train/loss": [[0, 2.25], [1, 1.5], [5, 0.125], [8589934592, 1e-30]],
            "held_out/accuracy": [[5, 0.9625], [9, NaN]]
        }}"#,
    );
    // The checker itself must notice a difference.
    let out = run_checker(
        writer.path(),
        r#"{"scalars": {"train/loss": [[0, 2.25], [1, 1.5], [5, 0.5], [8589934592, 1e-30]]}}"#,
    );
    let report = String::from_utf8_lossy(&out.stdout);
    assert!(
        !out.status.success(),
        "checker accepted a wrong expectation"
    );
    assert!(report.contains("scalar tags are"), "{report}");
    assert!(report.contains("train/loss: Scalars() gives"), "{report}");
    let _ = std::fs::remove_dir_all(&dir);
}
