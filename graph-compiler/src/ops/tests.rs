//! Unit tests of the op table: unique names, consistent rows, `docs/OPS.md` up to date.

use super::*;
use crate::ir::Op;

#[test]
fn names_are_unique() {
    for (i, a) in OPS.iter().enumerate() {
        assert!(
            OPS[i + 1..].iter().all(|b| b.name != a.name),
            "{} twice",
            a.name
        );
    }
}

/// `emit/eager.rs` renders these from their rows alone.
#[test]
fn operand_twins() {
    for op in [Op::Select, Op::BiasAdd, Op::Norm, Op::Unary(UnaryOp::Exp)] {
        assert!(eager_operands_fn(&op).is_some(), "{op:?}");
    }
    assert_eq!(eager_operands_fn(&Op::Unary(UnaryOp::Gelu)), None);
    assert_eq!(eager_operands_fn(&Op::Binary(BinaryOp::Add)), None);
}

/// Every row's lowering is of its family, and its arguments are in order (required,
/// then optional), so the derived signature and counts read right.
#[test]
fn rows_are_consistent() {
    for r in OPS {
        let first_optional = r.args.iter().position(|a| a.need != Need::Required);
        if let Some(k) = first_optional {
            assert!(
                r.args[k..].iter().all(|a| a.need != Need::Required),
                "{}: a required argument after an optional one",
                r.name
            );
            assert_ne!(r.args[k].need, Need::WithPrevious, "{}", r.name);
        }
        assert!(r.accepts(r.args.len()), "{}", r.name);
        let family_ok = match r.lowering {
            Lowering::Constant | Lowering::Zeros | Lowering::Ones | Lowering::Fill => {
                r.family == Family::Create
            }
            Lowering::Selection(_) => r.family == Family::Selection,
            Lowering::Assert(_) => r.family == Family::Check,
            Lowering::Gradients
            | Lowering::StopGradient
            | Lowering::Loss(_)
            | Lowering::Optimizer(_) => r.family == Family::Train,
            Lowering::Reduce(_)
            | Lowering::ReduceBool { .. }
            | Lowering::Cumsum
            | Lowering::TopK
            | Lowering::Norm => r.family == Family::Reduce,
            Lowering::MatMul | Lowering::Transpose | Lowering::Reshape | Lowering::BandPart => {
                r.family == Family::Linalg
            }
            _ => matches!(r.family, Family::Elementwise | Family::Nn),
        };
        assert!(family_ok, "{}: {:?} in {:?}", r.name, r.lowering, r.family);
    }
}

#[test]
fn derived_signatures_and_counts() {
    let row = |n| lookup(n).unwrap();
    assert_eq!(
        row("reduce_sum").signature(),
        "reduce_sum(x [, axis or [axes] [, keep_dims]])"
    );
    assert_eq!(row("cast").signature(), "cast::<T>(x)");
    assert_eq!(
        row("one_hot").signature(),
        "one_hot(indices, depth [, on, off]) / one_hot::<T>(indices, depth [, on, off])"
    );
    assert_eq!(row("truncatemod").signature(), "truncatemod(a, b) / a % b");
    let one_hot = row("one_hot");
    let counts: Vec<usize> = (0..6).filter(|&n| one_hot.accepts(n)).collect();
    assert_eq!(counts, [2, 4]);
    assert!(one_hot
        .arity_message(3)
        .starts_with("`one_hot` takes 2 or 4 arguments"));
    assert!(row("conv2d")
        .arity_message(3)
        .starts_with("`conv2d` takes 4 or 5 arguments"));
    assert!(row("exp")
        .arity_message(2)
        .starts_with("`exp` takes 1 argument,"));
    assert!(row("layer_norm")
        .arity_message(1)
        .starts_with("`layer_norm` takes 3 to 5 arguments"));
}

#[test]
fn nearest_names() {
    assert_eq!(nearest("reduce_summ"), Some("reduce_sum"));
    assert_eq!(nearest("sofmax"), Some("softmax"));
    assert_eq!(nearest("matmull"), Some("matmul"));
    assert_eq!(nearest("frobnicate"), None);
}

/// `docs/OPS.md` is the rendering of the table; `GRAFO_BLESS_OPS=1` rewrites it.
#[test]
fn ops_md_is_current() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/OPS.md");
    let rendered = ops_markdown();
    if std::env::var_os("GRAFO_BLESS_OPS").is_some() {
        std::fs::write(&path, &rendered).expect("write docs/OPS.md");
    }
    let on_disk = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        on_disk == rendered,
        "docs/OPS.md is not the rendering of the op table: run `GRAFO_BLESS_OPS=1 cargo test -p graph-compiler ops_md`"
    );
}

/// A near name of another meaning is never suggested: digits differ (`relu6`, `conv1d`), a
/// word is replaced (`reduce_var` is not `reduce_max`), or the name is a foreign op grafo
/// lacks, whose message says what to write instead.
#[test]
fn no_suggestion_of_another_meaning() {
    assert_eq!(nearest("conv1d"), None);
    assert_eq!(nearest("conv3d"), None);
    assert_eq!(nearest("max_pool3d"), None);
    assert_eq!(nearest("reduce_var"), None);
    assert_eq!(nearest("reduce_std"), None);
    assert_eq!(nearest("hardswish"), Some("hard_swish"));
    assert_eq!(nearest("logsoftmax"), Some("log_softmax"));
    assert_eq!(nearest("reduce_summ"), Some("reduce_sum"));
    for name in ["selu", "softmin", "tan", "cat", "unsqueeze", "erfc", "log2"] {
        let msg = unknown_op_message(name);
        assert!(
            msg.contains("; write `") && !msg.contains("did you mean"),
            "{msg}"
        );
    }
    assert!(unknown_op_message("atan").contains("grafo has no such op yet"));
}

/// Every foreign row names an op grafo lacks (a row of an op grafo has added must go), and
/// every op its advice calls is one of grafo's.
#[test]
fn foreign_names_are_not_ops_and_their_advice_calls_ops() {
    let keywords = ["f32", "let", "true", "consts"];
    for f in super::foreign::FOREIGN {
        assert!(
            lookup(f.name).is_none(),
            "grafo has `{}` now: remove its row from ops/foreign.rs",
            f.name
        );
        let Some(text) = f.instead else { continue };
        // The identifiers followed by `(` inside the backquoted code.
        for code in text.split('`').skip(1).step_by(2) {
            let chars: Vec<char> = code.chars().collect();
            let mut start = None;
            for (i, &c) in chars.iter().enumerate() {
                if c.is_ascii_alphanumeric() || c == '_' {
                    start.get_or_insert(i);
                    continue;
                }
                if let Some(s) = start.take() {
                    let ident: String = chars[s..i].iter().collect();
                    if c == '(' && !keywords.contains(&ident.as_str()) {
                        assert!(
                            lookup(&ident).is_some(),
                            "`{}`'s advice calls `{ident}`",
                            f.name
                        );
                    }
                }
            }
        }
    }
}
