//! `docs/OPS.md`, rendered from the table and the operators' list.

use super::table::{ANY, NUMBER, OPS};
use super::{Eager, Family, OpRow};
use std::fmt::Write as _;

/// `docs/OPS.md`, the op reference, rendered from [`OPS`].
pub fn ops_markdown() -> String {
    let mut md = String::new();
    md.push_str("# grafo op reference\n\n");
    md.push_str(
        "Generated from the op table in `graph-compiler/src/ops.rs` (do not edit by hand: run\n\
         `GRAFO_BLESS_OPS=1 cargo test -p graph-compiler ops_md`). Every op is called by its\n\
         plain name inside a `#[graph]` body; operands broadcast as in NumPy; a weak literal\n\
         (`0.5`, `2`) takes the dtype of the other operand. `docs/LANGUAGE-NOTES.md` says what\n\
         grafo chose where TensorFlow's behaviour needed a decision.\n\n",
    );
    md.push_str("## Operators\n\n");
    md.push_str("| operator | meaning | dtypes | TensorFlow |\n|---|---|---|---|\n");
    for (op, meaning, dtypes, tf) in OPERATORS {
        let _ = writeln!(md, "| `{op}` | {meaning} | {dtypes} | `{tf}` |");
    }
    md.push('\n');
    for family in Family::ALL {
        let rows: Vec<&OpRow> = OPS.iter().filter(|r| r.family == family).collect();
        if rows.is_empty() {
            continue;
        }
        let _ = writeln!(md, "## {}\n", family.title());
        md.push_str(
            "| op | signature | dtypes | shape | TensorFlow | gradient |\n|---|---|---|---|---|---|\n",
        );
        for r in &rows {
            let _ = writeln!(
                md,
                "| [`{}`](#{}) | `{}` | {} | {} | `{}` | {} |",
                r.name,
                r.name,
                r.signature(),
                r.dtypes,
                r.shape,
                r.tf,
                r.grad
            );
        }
        md.push('\n');
        for r in &rows {
            let eager = match r.eager {
                Eager::Operands(f) | Eager::Custom(f) => {
                    format!("Eager twin: `grafo::eager::{f}`.")
                }
                Eager::Literal => "Eager twin: a literal array.".to_string(),
                Eager::Composite => {
                    "Eager twin: none of its own; it is lowered into other ops, each run by its own eager function."
                        .to_string()
                }
            };
            let _ = writeln!(
                md,
                "### {}\n\n{}\n\n{eager} Gradient: {}.\n\n```rust\n{}\n```\n",
                r.name, r.doc, r.grad, r.example
            );
        }
    }
    md.push_str(&layers_markdown());
    md
}

/// The layers library's section: each function, its layer struct and what it computes.
fn layers_markdown() -> String {
    use crate::structs::layers::LayerKind;
    let mut md = String::from("## Layers\n\n");
    md.push_str(
        "The functions of the layers library (`docs/LANGUAGE.md` section 10): each takes a layer \
         struct of `grafo::layers` first and lowers to the ops above, so it fuses, differentiates \
         and runs eagerly as they do. `conv2d`, `depthwise_conv2d` and `layer_norm` are the \
         layer's when their first argument is a layer, or written `layers::NAME(..)`.\n\n",
    );
    md.push_str("| function | layer | computes | Keras |\n|---|---|---|---|\n");
    for k in LayerKind::ALL {
        let _ = writeln!(
            md,
            "| `{}` | `{}` | {} | `{}` |",
            k.signature(),
            k.form(),
            k.doc(),
            k.keras()
        );
    }
    md.push('\n');
    md
}

/// The Rust operators a body may use on tensors: the operator, its meaning, dtypes, TensorFlow op.
const OPERATORS: &[(&str, &str, &str, &str)] = &[
    ("a + b", "elementwise sum", NUMBER, "tf.math.add"),
    (
        "a - b",
        "elementwise difference",
        NUMBER,
        "tf.math.subtract",
    ),
    ("a * b", "elementwise product", NUMBER, "tf.math.multiply"),
    (
        "a / b",
        "elementwise quotient (integers divide as Rust does)",
        NUMBER,
        "tf.math.divide / tf.math.truncatediv",
    ),
    ("-a", "negation", NUMBER, "tf.math.negative"),
    (
        "x[s![.., t, 0..10;2]]",
        "indexing and slicing with ndarray's `s!`: an index drops the axis, negative counts from the end, a negative step walks the range backwards as ndarray does; `t` may be a run-time integer",
        ANY,
        "x[...] (tf.strided_slice)",
    ),
    (
        "a < b, a <= b, a > b, a >= b, a == b, a != b",
        "comparison, a bool tensor",
        ANY,
        "tf.math.less ...",
    ),
];
