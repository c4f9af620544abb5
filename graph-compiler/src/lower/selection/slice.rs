//! Slice shapes and TF's `slice` and `strided_slice` (with their masks): the element count of each axis, static or symbolic.

use crate::ir::*;
use crate::lower::{Lowerer, Span, Value};
use syn::Expr;

/// The size of a slice along one axis of size `len` (TF and ndarray's rules, as the kernel).
fn static_count(spec: SliceSpec, len: u64, axis: usize) -> Result<Option<u64>, String> {
    // In i128, so no bound, size or stride at the edge of i64/u64 overflows.
    let n = len as i128;
    let from_end = |v: i64| if v < 0 { v as i128 + n } else { v as i128 };
    match spec {
        SliceSpec::IndexInput(_) => Ok(None),
        SliceSpec::Index(i) => {
            let at = from_end(i);
            if at < 0 || at >= n {
                return Err(format!(
                    "index {i} is out of range for axis {axis} of size {len}"
                ));
            }
            Ok(None)
        }
        SliceSpec::Range { start, end, step } => {
            if step == 0 {
                return Err(format!("the step of axis {axis} is 0"));
            }
            let first = from_end(start);
            if first < 0 || first > n {
                return Err(format!(
                    "slice start {start} is out of range for axis {axis} of size {len}"
                ));
            }
            let last = match end {
                None => n,
                Some(e) => {
                    let last = from_end(e);
                    if last < 0 || last > n {
                        return Err(format!(
                            "slice end {e} is out of range for axis {axis} of size {len}"
                        ));
                    }
                    last
                }
            };
            let m = (last - first).max(0) as u64;
            Ok(Some(m.div_ceil(step.unsigned_abs())))
        }
        SliceSpec::Strided { begin, end, stride } => {
            if stride == 0 {
                return Err(format!("the stride of axis {axis} is 0"));
            }
            let (b, e) = (from_end(begin), from_end(end));
            let abs = stride.unsigned_abs() as i128;
            let count = if stride > 0 {
                let (b, e) = (b.clamp(0, n), e.clamp(0, n));
                if e > b {
                    (e - b - 1) / abs + 1
                } else {
                    0
                }
            } else {
                let (b, e) = (b.clamp(-1, n - 1), e.clamp(-1, n - 1));
                if b > e {
                    (b - e - 1) / abs + 1
                } else {
                    0
                }
            };
            Ok(Some(count as u64))
        }
    }
}

/// The size of a slice along a symbolic axis `sym`: the whole axis, or a count that does not
/// depend on the symbol (both bounds counted from the same end); the kernel checks the bounds.
fn symbolic_count(spec: SliceSpec, dim: &Dim, axis: usize) -> Result<Option<Dim>, String> {
    let sym = dim.to_string();
    let depends = || {
        format!(
            "the size of this slice of axis {axis} depends on the symbolic dim `{sym}`; use bounds counted from the same end (`0..10`, `-3..`) or the whole axis (`..`, `..;-1`)"
        )
    };
    match spec {
        SliceSpec::Index(_) | SliceSpec::IndexInput(_) => Ok(None),
        SliceSpec::Range { step: 0, .. } => Err(format!("the step of axis {axis} is 0")),
        SliceSpec::Range {
            start: 0,
            end: None,
            step,
        } => {
            if step.unsigned_abs() == 1 {
                Ok(Some(dim.clone()))
            } else {
                Err(format!(
                    "a step of {step} over the whole symbolic axis {axis} (`{sym}`) gives a size that is not a dim grafo can name; slice a static range"
                ))
            }
        }
        SliceSpec::Range { start, end, step } => {
            let m = match end {
                Some(e) if (start >= 0) == (e >= 0) => (e as i128 - start as i128).max(0),
                None if start < 0 => -(start as i128),
                _ => return Err(depends()),
            };
            Ok(Some(Dim::Const((m as u64).div_ceil(step.unsigned_abs()))))
        }
        SliceSpec::Strided { stride: 0, .. } => Err(format!("the stride of axis {axis} is 0")),
        SliceSpec::Strided { begin, end, stride } => {
            // Each bound as a position counted from the start or from the end of the axis;
            // a masked bound (TF's `begin_mask`/`end_mask`, held as i64::MIN/MAX, which the
            // clamp turns into the same ends) is the end of the axis the stride starts from
            // or walks to.
            let frame = |v: i64| {
                if v >= 0 {
                    Bound::Start(v as i128)
                } else {
                    Bound::End(v as i128)
                }
            };
            let (b, e) = if stride > 0 {
                (
                    if begin == i64::MIN {
                        Bound::Start(0)
                    } else {
                        frame(begin)
                    },
                    if end == i64::MAX {
                        Bound::End(0)
                    } else {
                        frame(end)
                    },
                )
            } else {
                (
                    if begin == i64::MAX {
                        Bound::End(-1)
                    } else {
                        frame(begin)
                    },
                    if end == i64::MIN {
                        Bound::Start(-1)
                    } else {
                        frame(end)
                    },
                )
            };
            let abs = stride.unsigned_abs() as i128;
            let (b, e) = match (b, e) {
                (Bound::Start(b), Bound::Start(e)) | (Bound::End(b), Bound::End(e)) => (b, e),
                (Bound::Start(0), Bound::End(0)) | (Bound::End(-1), Bound::Start(-1)) => {
                    return if abs == 1 {
                        Ok(Some(dim.clone()))
                    } else {
                        Err(format!(
                            "a stride of {stride} over the whole symbolic axis {axis} (`{sym}`) gives a size that is not a dim grafo can name; slice a static range"
                        ))
                    };
                }
                _ => return Err(depends()),
            };
            let count = if stride > 0 {
                if e > b {
                    (e - b - 1) / abs + 1
                } else {
                    0
                }
            } else if b > e {
                (b - e - 1) / abs + 1
            } else {
                0
            };
            Ok(Some(Dim::Const(count as u64)))
        }
    }
}

/// A slice bound on a symbolic axis: a position from the start, or one relative to the end.
#[derive(Clone, Copy)]
enum Bound {
    Start(i128),
    End(i128),
}

/// The names of `strided_slice`'s masks, in TF's order (its 5th to 9th arguments).
const MASK_NAMES: [&str; 5] = [
    "begin_mask",
    "end_mask",
    "ellipsis_mask",
    "new_axis_mask",
    "shrink_axis_mask",
];

/// TF's five masks of `strided_slice`: bit `i` of each refers to entry `i` of `begin`, `end`
/// and `strides`.
#[derive(Debug, Clone, Copy, Default)]
struct StridedMasks {
    begin: u64,
    end: u64,
    ellipsis: u64,
    new_axis: u64,
    shrink: u64,
}

/// TF's expansion of a `strided_slice` spec (its `BuildDenseSpec` and canonicalisation): one
/// [`SliceSpec`] per axis of a tensor of rank `rank`, and the positions in the result of the
/// axes of size 1 that `new_axis_mask` inserts; or the message of what is wrong with the
/// argument it is about (`strided_slice`'s argument index: 3 the strides, 6 `ellipsis_mask`,
/// 8 `shrink_axis_mask`, 1 the begin list).
///
/// An `ellipsis_mask` entry stands for as many whole axes as the other entries leave (without
/// one, the axes after the last entry are whole); a `new_axis_mask` entry adds an axis of
/// size 1 and reads none; a `shrink_axis_mask` entry takes the one element at `begin` and drops
/// the axis (`end` and the stride are ignored, but the stride must be positive, as TF's
/// "only stride 1 allowed on non-range indexing"); a masked `begin` or `end` is the end of the
/// axis the stride starts from or walks to, held as i64::MIN or i64::MAX (which clamp there).
/// Ellipsis wins over new axis, new axis over shrink, as in TF.
fn tf_dense_spec(
    begin: &[i64],
    end: &[i64],
    strides: &[i64],
    masks: StridedMasks,
    rank: usize,
) -> Result<(Vec<SliceSpec>, Vec<usize>), (usize, String)> {
    let bit = |m: u64, i: usize| i < 64 && m >> i & 1 == 1;
    if masks.ellipsis.count_ones() > 1 {
        return Err((6, format!(
            "`ellipsis_mask` {:#b} has more than one bit set; a spec has at most one ellipsis (TF: multiple ellipses in slice spec not allowed)",
            masks.ellipsis
        )));
    }
    let n = begin.len();
    let ellipsis_at = (0..n).find(|&i| bit(masks.ellipsis, i));
    // The entries that read an input axis (neither the ellipsis nor a new axis).
    let reads = |i: usize| !bit(masks.ellipsis, i) && !bit(masks.new_axis, i);
    let reading = (0..n).filter(|&i| reads(i)).count();
    if reading > rank {
        return Err((1, format!(
            "{reading} entries read an axis (not counting the ellipsis and new axes) but the tensor has rank {rank}"
        )));
    }
    let whole = SliceSpec::Range {
        start: 0,
        end: None,
        step: 1,
    };
    let mut axes = Vec::new();
    let mut new_axes = Vec::new();
    let mut out_pos = 0usize;
    for i in 0..n {
        if Some(i) == ellipsis_at {
            // The ellipsis covers the axes the entries after it do not read.
            let after = (i + 1..n).filter(|&j| reads(j)).count();
            let covered = rank - axes.len() - after;
            axes.extend(std::iter::repeat_n(whole, covered));
            out_pos += covered;
            continue;
        }
        if bit(masks.new_axis, i) {
            new_axes.push(out_pos);
            out_pos += 1;
            continue;
        }
        let (b, e, s) = (begin[i], end[i], strides[i]);
        let axis = axes.len();
        if s == 0 {
            return Err((3, format!("entry {i} (axis {axis}) has stride 0")));
        }
        if bit(masks.shrink, i) {
            if s < 0 {
                return Err((8, format!(
                    "entry {i} (axis {axis}) is in `shrink_axis_mask` but has stride {s}; an index needs a positive stride (TF: only stride 1 allowed on non-range indexing)"
                )));
            }
            axes.push(SliceSpec::Index(b));
            continue;
        }
        let b = match (bit(masks.begin, i), s > 0) {
            (false, _) => b,
            (true, true) => i64::MIN,
            (true, false) => i64::MAX,
        };
        let e = match (bit(masks.end, i), s > 0) {
            (false, _) => e,
            (true, true) => i64::MAX,
            (true, false) => i64::MIN,
        };
        axes.push(SliceSpec::Strided {
            begin: b,
            end: e,
            stride: s,
        });
        out_pos += 1;
    }
    axes.resize(rank, whole);
    Ok((axes, new_axes))
}

/// The shape of a slice of `shape` (axes past `axes` are kept whole), or the message of the
/// axis at fault with that axis.
pub(super) fn slice_shape(shape: &[Dim], axes: &[SliceSpec]) -> Result<Shape, (usize, String)> {
    let mut out = Vec::new();
    for (a, d) in shape.iter().enumerate() {
        let spec = axes.get(a).copied().unwrap_or(SliceSpec::Range {
            start: 0,
            end: None,
            step: 1,
        });
        let dim = match d {
            Dim::Const(n) => static_count(spec, *n, a).map(|c| c.map(Dim::Const)),
            symbolic => symbolic_count(spec, symbolic, a),
        }
        .map_err(|m| (a, m))?;
        out.extend(dim);
    }
    Ok(out)
}

impl Lowerer<'_> {
    pub(super) fn lower_tf_slice(&mut self, name: &str, args: &[&Expr], span: Span) -> Value {
        let (x, xn) = self.sel_operand(args[0]);
        // The lists (`begin`, `size` / `begin`, `end`, `strides`); `strided_slice`'s masks follow.
        let lists: Option<Vec<Vec<i64>>> = args[1..args.len().min(4)]
            .iter()
            .map(|a| self.int_list_exact(a))
            .collect();
        let Some(lists) = lists else {
            return Value::Tensor(self.poisoned(span));
        };
        if xn.poisoned {
            return Value::Tensor(self.poisoned(span));
        }
        let rank = xn.shape.len();
        let ty = type_str(xn.dtype, &xn.shape);
        let mut axes = Vec::new();
        let mut new_axes = Vec::new();
        if name == "slice" {
            let (begin, size) = (&lists[0], &lists[1]);
            for (k, list) in [begin, size].into_iter().enumerate() {
                if list.len() != rank {
                    let what = if k == 0 { "begin" } else { "size" };
                    let msg = format!(
                        "`slice` needs one `{what}` entry per axis: the tensor is {ty} (rank {rank}), `{what}` has {}",
                        list.len()
                    );
                    return self.sel_error(args[1 + k].span(), msg, span);
                }
            }
            for a in 0..rank {
                let (b, s) = (begin[a], size[a]);
                let bad = b < 0 || s < -1;
                let fits = match &xn.shape[a] {
                    Dim::Const(d) => {
                        let (b, s, d) = (b as i128, s as i128, *d as i128);
                        b <= d && (s == -1 || b + s <= d)
                    }
                    _ => true,
                };
                if bad || !fits {
                    let msg = format!(
                        "`slice` axis {a}: begin {b} and size {s} do not fit in {} (TF needs 0 <= begin <= begin + size <= dim, size -1 for the rest); the tensor is {ty}",
                        xn.shape[a]
                    );
                    return self.sel_error(args[1].span(), msg, span);
                }
                axes.push(SliceSpec::Range {
                    start: b,
                    end: if s == -1 { None } else { Some(b + s) },
                    step: 1,
                });
            }
        } else {
            let n = lists[0].len();
            let strides = lists.get(2).cloned().unwrap_or_else(|| vec![1; n]);
            if lists[1].len() != n || strides.len() != n {
                let msg = format!(
                    "`strided_slice` needs `begin`, `end` and `strides` of one length; found {}, {} and {}",
                    lists[0].len(),
                    lists[1].len(),
                    strides.len()
                );
                return self.sel_error(span, msg, span);
            }
            let mut values = [0u64; 5];
            for (k, e) in args.iter().skip(4).enumerate() {
                match self.mask_value(e) {
                    Some(v) => values[k] = v,
                    None => {
                        let what = format!("`{}`", MASK_NAMES[k]);
                        let msg = self.int_expected(e, &what, format!(
                            "`{}` must be a non-negative integer literal or `const` (bits may be combined with `|` and `<<`); the masks follow `strides` in TF's order: begin_mask, end_mask, ellipsis_mask, new_axis_mask, shrink_axis_mask",
                            MASK_NAMES[k]
                        ));
                        return self.sel_error(e.span(), msg, span);
                    }
                }
            }
            let masks = StridedMasks {
                begin: values[0],
                end: values[1],
                ellipsis: values[2],
                new_axis: values[3],
                shrink: values[4],
            };
            match tf_dense_spec(&lists[0], &lists[1], &strides, masks, rank) {
                Ok((a, n)) => {
                    axes = a;
                    new_axes = n;
                }
                Err((at, msg)) => {
                    let msg = format!("`strided_slice`: {msg} (the tensor is {ty})");
                    let at = args.get(at).map_or(span, |a| a.span());
                    return self.sel_error(at, msg, span);
                }
            }
        }
        let op_name: &'static str = if name == "slice" {
            "slice"
        } else {
            "strided_slice"
        };
        match slice_shape(&xn.shape, &axes) {
            Ok(shape) => {
                let op = SelOp::Slice {
                    name: op_name,
                    axes,
                };
                let id = self.sel_node(op, vec![x], xn.dtype, shape.clone(), span);
                Value::Tensor(self.with_new_axes(id, shape, &new_axes, span))
            }
            Err((_, msg)) => {
                let msg = format!("`{name}`: {msg} (the tensor is {ty})");
                self.sel_error(args[1].span(), msg, span)
            }
        }
    }

    /// A `strided_slice` mask: a non-negative integer literal or `const`, or `|`, `<<` and
    /// parentheses over them (`1 | 1 << 2`).
    fn mask_value(&self, e: &Expr) -> Option<u64> {
        match e {
            Expr::Binary(b) => {
                let (l, r) = (self.mask_value(&b.left)?, self.mask_value(&b.right)?);
                match b.op {
                    syn::BinOp::BitOr(_) => Some(l | r),
                    syn::BinOp::Shl(_) if r < 63 => l.checked_shl(r as u32).filter(|v| v >> r == l),
                    _ => None,
                }
            }
            Expr::Paren(p) => self.mask_value(&p.expr),
            Expr::Group(g) => self.mask_value(&g.expr),
            _ => self.literal_int(e).and_then(|v| u64::try_from(v).ok()),
        }
    }
}
