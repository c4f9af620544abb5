//! Finding a row: by name, by IR op (the eager operands function), and the nearest name for the unknown-op message.

use super::foreign::{foreign, Foreign};
use super::table::OPS;
use super::{Eager, OpRow};
use crate::ir::Op;
use std::fmt::Write as _;

/// The row of the op called `name`.
pub fn lookup(name: &str) -> Option<&'static OpRow> {
    OPS.iter().find(|row| row.name == name)
}

/// The `grafo::eager` function of an IR node lowered one to one from a row whose twin takes
/// the operands alone (`Eager::Operands`); `None` for every other node.
pub fn eager_operands_fn(op: &Op) -> Option<&'static str> {
    let name = match op {
        Op::Unary(u) => u.name(),
        Op::Binary(b) => b.name(),
        Op::Select => "select",
        Op::BiasAdd => "bias_add",
        Op::Norm => "norm",
        _ => return None,
    };
    match lookup(name)?.eager {
        Eager::Operands(f) => Some(f),
        _ => None,
    }
}

/// The op name nearest to `name` that is a typo of it: within an edit distance of a third
/// of its length (at least 1), with the same digits (`relu6` is not `relu`, `conv1d` not
/// `conv2d`), and, between names of as many `_`-separated words, no word replaced by another
/// (`reduce_var` is not `reduce_max`). For the unknown-op message's "did you mean".
pub fn nearest(name: &str) -> Option<&'static str> {
    let limit = (name.chars().count() / 3).max(1);
    OPS.iter()
        .filter(|row| is_typo_of(name, row.name))
        .map(|row| (edit_distance(name, row.name), row.name))
        .filter(|(d, _)| *d <= limit)
        .min_by_key(|(d, _)| *d)
        .map(|(_, n)| n)
}

/// Whether `typed` may be a misspelling of `op` rather than another op's name: the same
/// digits, and each word within a third of its length (at least 1) of its counterpart when
/// both have as many words.
fn is_typo_of(typed: &str, op: &str) -> bool {
    let digits = |s: &str| -> String { s.chars().filter(char::is_ascii_digit).collect() };
    if digits(typed) != digits(op) {
        return false;
    }
    let (a, b): (Vec<&str>, Vec<&str>) = (typed.split('_').collect(), op.split('_').collect());
    a.len() != b.len()
        || a.iter().zip(&b).all(|(x, y)| {
            let limit = (x.chars().count().max(y.chars().count()) / 3).max(1);
            edit_distance(x, y) <= limit
        })
}

/// The Levenshtein distance between two names.
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let substitute = diagonal + usize::from(ca != *cb);
            diagonal = row[j + 1];
            row[j + 1] = substitute.min(row[j] + 1).min(diagonal + 1);
        }
    }
    row[b.len()]
}

/// The message for a call of an op the table does not have: what to write instead of a
/// foreign name grafo knows (never a near name, which may mean something else), else the
/// nearest typo's op.
pub fn unknown_op_message(name: &str) -> String {
    let mut msg = format!("unknown op `{name}` in a `#[graph]` body");
    match foreign(name) {
        Some(Foreign {
            instead: Some(text),
            ..
        }) => {
            let _ = write!(msg, "; write {text}");
            return msg;
        }
        Some(Foreign { instead: None, .. }) => msg.push_str(": grafo has no such op yet"),
        None => {
            if let Some(near) = nearest(name) {
                let _ = write!(msg, "; did you mean `{near}`?");
            }
        }
    }
    msg.push_str(" (the ops are listed in grafo's docs/OPS.md)");
    msg
}
