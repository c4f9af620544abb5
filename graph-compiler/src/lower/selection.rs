//! Lowering of the selection and assembly ops, each with its shape rule: indexing with
//! ndarray's `s![..]`, `slice`, `strided_slice`, `concat`, `stack`, `split`, `tile`, `pad`,
//! `expand_dims`, `squeeze`, `gather`, `one_hot`, `argmax`/`argmin` and `range`.
//!
//! Static bounds are checked here (an index out of range is an error at the index); bounds
//! on a symbolic dim are allowed when the result's size does not depend on the symbol, and
//! the kernel checks them against the run-time size (an `Err`, never a panic).

use super::{Call, Lowerer, Span, Value};
use crate::ir::*;
use crate::ops::Selection;
use proc_macro2::{TokenStream, TokenTree};
use syn::Expr;

/// An index that is known now or read at run time from a rank-0 integer node.
enum IndexValue {
    Static(i64),
    Dynamic(NodeId),
}

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
fn slice_shape(shape: &[Dim], axes: &[SliceSpec]) -> Result<Shape, (usize, String)> {
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

/// The entries of `s![...]`: split at top-level commas, each at its `;` (the step).
fn s_entries(tokens: TokenStream) -> Vec<(TokenStream, Option<TokenStream>)> {
    let mut entries = Vec::new();
    let mut range = TokenStream::new();
    let mut step: Option<TokenStream> = None;
    let mut flush = |range: &mut TokenStream, step: &mut Option<TokenStream>| {
        entries.push((std::mem::take(range), step.take()));
    };
    let mut any = false;
    for tt in tokens {
        any = true;
        match &tt {
            TokenTree::Punct(p) if p.as_char() == ',' => flush(&mut range, &mut step),
            TokenTree::Punct(p) if p.as_char() == ';' && step.is_none() => {
                step = Some(TokenStream::new())
            }
            _ => match &mut step {
                Some(s) => s.extend([tt]),
                None => range.extend([tt]),
            },
        }
    }
    if any && (!range.is_empty() || step.is_some()) {
        flush(&mut range, &mut step);
    }
    entries
}

impl Lowerer<'_> {
    /// A node for selection op `op` unless an input is poisoned.
    fn sel_node(
        &mut self,
        op: SelOp,
        inputs: Vec<NodeId>,
        dtype: DType,
        shape: Shape,
        span: Span,
    ) -> NodeId {
        if self.is_poisoned(&inputs) {
            return self.poisoned(span);
        }
        self.push(Op::Sel(op), inputs, dtype, shape, span)
    }

    /// A `reshape` view of `x` to `shape` (`expand_dims`, `squeeze`, `stack`'s new axis).
    /// `x` (of `shape`) with axes of size 1 inserted at `new_axes` (positions in the result,
    /// ascending): ndarray's `NewAxis` and TF's `new_axis_mask`. A view; `x` itself when there
    /// are none.
    fn with_new_axes(&mut self, x: NodeId, shape: Shape, new_axes: &[usize], span: Span) -> NodeId {
        if new_axes.is_empty() {
            return x;
        }
        let mut with_new = shape;
        for &at in new_axes {
            with_new.insert(at, Dim::Const(1));
        }
        self.view_as(x, with_new, span)
    }

    fn view_as(&mut self, x: NodeId, shape: Shape, span: Span) -> NodeId {
        if self.is_poisoned(&[x]) {
            return self.poisoned(span);
        }
        let dt = self.graph.node(x).dtype;
        self.push(Op::Reshape, vec![x], dt, shape, span)
    }

    fn sel_error(&mut self, at: Span, msg: impl Into<String>, span: Span) -> Value {
        self.diag.error(at, msg.into());
        Value::Tensor(self.poisoned(span))
    }

    /// An operand as a concrete (non-weak) tensor node with its node.
    fn sel_operand(&mut self, e: &Expr) -> (NodeId, Node) {
        let x = self.operand(e);
        let x = self.concrete(x);
        (x, self.graph.node(x).clone())
    }

    /// An axis literal in `-rank..rank` (`-rank-1..=rank` where a new axis is inserted).
    fn sel_axis(&mut self, op: &str, e: &Expr, rank: usize) -> Option<usize> {
        let Some(a) = self.literal_int(e) else {
            self.diag
                .error(e.span(), format!("`{op}` axis must be an integer literal"));
            return None;
        };
        let r = rank as i64;
        if a < -r || a >= r {
            let msg = if rank == 0 {
                format!("`{op}` axis {a} is out of range: the tensor has rank 0")
            } else {
                format!(
                    "`{op}` axis {a} is out of range for rank {rank} (axes are {}..={})",
                    -r,
                    r - 1
                )
            };
            self.diag.error(e.span(), msg);
            return None;
        }
        Some(if a < 0 { (a + r) as usize } else { a as usize })
    }

    /// A static or run-time index: a literal, a `for` variable, a `const`, or a rank-0 integer value.
    fn index_value(&mut self, e: &Expr) -> Option<IndexValue> {
        let id = self.operand(e);
        let n = self.graph.node(id).clone();
        if n.poisoned {
            return None;
        }
        if let Op::Const { value, .. } = n.op {
            return match value {
                Scalar::Int(v) => Some(IndexValue::Static(v)),
                _ => {
                    self.diag.error(
                        e.span(),
                        format!("an index must be an integer, found `{value}`"),
                    );
                    None
                }
            };
        }
        if !n.dtype.is_int() || !n.shape.is_empty() {
            self.diag.error(
                e.span(),
                format!(
                    "an index must be an integer: a literal, a `for` variable, a host integer or a rank-0 integer tensor; found {}",
                    type_str(n.dtype, &n.shape)
                ),
            );
            return None;
        }
        Some(IndexValue::Dynamic(id))
    }

    /// `x[s![...]]`: ndarray's slicing syntax (an index drops the axis; `a..b;step` as ndarray).
    pub(super) fn lower_index(&mut self, ix: &syn::ExprIndex) -> Value {
        let span = ix.span();
        let mac = match &*ix.index {
            Expr::Macro(m) if m.mac.path.is_ident("s") => &m.mac,
            other => return self.sel_error(
                other.span(),
                "a tensor is indexed with ndarray's `s![...]` macro, e.g. `x[s![.., t, 0..10;2]]`",
                span,
            ),
        };
        let (x, xn) = self.sel_operand(&ix.expr);
        let all_entries = s_entries(mac.tokens.clone());
        // ndarray's `NewAxis` inserts an axis of size 1 where it stands among the kept axes.
        let is_new_axis = |range: &TokenStream| {
            syn::parse2::<syn::Path>(range.clone()).is_ok_and(|p| p.is_ident("NewAxis"))
        };
        let mut new_axes = Vec::new();
        let mut kept = 0usize;
        let mut entries = Vec::new();
        for (range, step) in all_entries {
            if is_new_axis(&range) && step.is_none() {
                new_axes.push(kept);
                kept += 1;
                continue;
            }
            let is_range =
                syn::parse2::<Expr>(range.clone()).is_ok_and(|e| matches!(e, Expr::Range(_)));
            if is_range {
                kept += 1;
            }
            entries.push((range, step));
        }
        if entries.len() > xn.shape.len() && !xn.poisoned {
            let msg = format!(
                "`s![...]` has {} {} but the tensor is {} (rank {})",
                entries.len(),
                if entries.len() == 1 {
                    "entry"
                } else {
                    "entries"
                },
                type_str(xn.dtype, &xn.shape),
                xn.shape.len()
            );
            return self.sel_error(mac.span(), msg, span);
        }
        let mut axes = Vec::new();
        let mut inputs = vec![x];
        let mut spans = Vec::new();
        for (range, step_tokens) in &entries {
            let entry_span = Span::of(&quote::quote!(#range));
            spans.push(entry_span);
            let expr: Expr = match syn::parse2(range.clone()) {
                Ok(e) => e,
                Err(_) => {
                    return self.sel_error(
                        entry_span,
                        "expected an index or a range (`..`, `a..`, `..b`, `a..b`, `a..=b`), optionally with `;step`",
                        span,
                    )
                }
            };
            let step = match step_tokens {
                None => 1,
                Some(s) => {
                    let step_span = Span::of(s);
                    match syn::parse2::<Expr>(s.clone())
                        .ok()
                        .and_then(|e| self.literal_int(&e))
                    {
                        Some(v) => v,
                        None => {
                            return self.sel_error(
                                step_span,
                                "a slice step must be an integer literal or a `const`",
                                span,
                            )
                        }
                    }
                }
            };
            let spec = match &expr {
                Expr::Range(r) => {
                    let bound = |lw: &mut Self, e: &Option<Box<Expr>>| -> Result<Option<i64>, ()> {
                        let Some(e) = e else { return Ok(None) };
                        match lw.index_value(e) {
                            Some(IndexValue::Static(v)) => Ok(Some(v)),
                            Some(IndexValue::Dynamic(_)) => {
                                lw.diag.error(e.span(), "a range bound must be known at compile time (a literal, a `for` variable or a `const`); only a single index may be a run-time value");
                                Err(())
                            }
                            None => Err(()),
                        }
                    };
                    let (Ok(start), Ok(end)) = (bound(self, &r.start), bound(self, &r.end)) else {
                        return Value::Tensor(self.poisoned(span));
                    };
                    let end = match (&r.limits, end) {
                        (syn::RangeLimits::Closed(_), Some(-1)) => None,
                        (syn::RangeLimits::Closed(_), Some(e)) => Some(e + 1),
                        (_, e) => e,
                    };
                    SliceSpec::Range {
                        start: start.unwrap_or(0),
                        end,
                        step,
                    }
                }
                index => {
                    if step_tokens.is_some() {
                        return self.sel_error(
                            entry_span,
                            "a step (`;n`) needs a range (`a..b;n`), not an index",
                            span,
                        );
                    }
                    match self.index_value(index) {
                        Some(IndexValue::Static(v)) => SliceSpec::Index(v),
                        Some(IndexValue::Dynamic(id)) => {
                            inputs.push(id);
                            SliceSpec::IndexInput(inputs.len() - 1)
                        }
                        None => return Value::Tensor(self.poisoned(span)),
                    }
                }
            };
            axes.push(spec);
        }
        if xn.poisoned {
            return Value::Tensor(self.poisoned(span));
        }
        match slice_shape(&xn.shape, &axes) {
            Ok(shape) => {
                let op = SelOp::Slice {
                    name: "index",
                    axes,
                };
                let id = self.sel_node(op, inputs, xn.dtype, shape.clone(), span);
                Value::Tensor(self.with_new_axes(id, shape, &new_axes, span))
            }
            Err((a, msg)) => {
                let msg = format!("{msg} (the tensor is {})", type_str(xn.dtype, &xn.shape));
                self.sel_error(spans[a], msg, span)
            }
        }
    }

    /// Lowers a call of a selection op; the row's check has accepted its arguments.
    pub(super) fn selection_call(&mut self, sel: Selection, call: &Call) -> Value {
        let (name, args, span, turbofish) = (call.name, call.args, call.span, call.turbofish);
        match sel {
            Selection::Slice | Selection::StridedSlice => self.lower_tf_slice(name, args, span),
            Selection::Concat | Selection::Stack => self.lower_concat(name, args, span),
            Selection::Split => self.lower_split(args, span),
            Selection::Tile => self.lower_tile(args, span),
            Selection::Pad => self.lower_pad(args, span),
            Selection::ExpandDims | Selection::Squeeze => {
                self.lower_expand_squeeze(name, args, span)
            }
            Selection::Gather => self.lower_gather(args, span),
            Selection::OneHot => self.lower_one_hot(args, span, turbofish),
            Selection::ArgMax | Selection::ArgMin => self.lower_arg_reduce(name, args, span),
            Selection::Range => self.lower_range(args, span, turbofish),
        }
    }

    fn int_list_exact(&mut self, e: &Expr) -> Option<Vec<i64>> {
        if !matches!(e, Expr::Array(_)) {
            self.diag
                .error(e.span(), "expected a list of integer literals (`[0, 2]`)");
            return None;
        }
        self.int_list(e)
    }

    fn lower_tf_slice(&mut self, name: &str, args: &[&Expr], span: Span) -> Value {
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
                        let msg = format!(
                            "`{}` must be a non-negative integer literal or `const` (bits may be combined with `|` and `<<`); the masks follow `strides` in TF's order: begin_mask, end_mask, ellipsis_mask, new_axis_mask, shrink_axis_mask",
                            MASK_NAMES[k]
                        );
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

    fn lower_concat(&mut self, name: &str, args: &[&Expr], span: Span) -> Value {
        let Expr::Array(list) = args[0] else {
            let msg = format!("`{name}` takes a list of tensors `[a, b, ...]` first");
            return self.sel_error(args[0].span(), msg, span);
        };
        if list.elems.is_empty() {
            let msg = format!("`{name}` needs at least one tensor");
            return self.sel_error(args[0].span(), msg, span);
        }
        let parts: Vec<(NodeId, Node, Span)> = list
            .elems
            .iter()
            .map(|e| {
                let (id, n) = self.sel_operand(e);
                (id, n, e.span())
            })
            .collect();
        if parts.iter().any(|p| p.1.poisoned) {
            return Value::Tensor(self.poisoned(span));
        }
        let first = parts[0].1.clone();
        let ty0 = type_str(first.dtype, &first.shape);
        let stack = name == "stack";
        let rank = first.shape.len() + usize::from(stack);
        if !stack && rank == 0 {
            let msg =
                format!("`concat` joins tensors along an axis; the first is a scalar ({ty0})");
            return self.sel_error(parts[0].2, msg, span);
        }
        let axis = match args.get(1) {
            Some(a) => match self.sel_axis(name, a, rank) {
                Some(a) => a,
                None => return Value::Tensor(self.poisoned(span)),
            },
            None => 0,
        };
        for (k, (_, n, at)) in parts.iter().enumerate().skip(1) {
            let ty = type_str(n.dtype, &n.shape);
            if n.dtype != first.dtype {
                let msg = format!("`{name}` operands must have one dtype: operand 0 is {ty0}, operand {k} is {ty}");
                return self.sel_error(*at, msg, span);
            }
            let agree = if stack {
                n.shape == first.shape
            } else {
                n.shape.len() == first.shape.len()
                    && n.shape
                        .iter()
                        .zip(&first.shape)
                        .enumerate()
                        .all(|(a, (x, y))| a == axis || x == y)
            };
            if !agree {
                let msg = if stack {
                    format!("`stack` operands must have one shape: operand 0 is {ty0}, operand {k} is {ty}")
                } else {
                    format!("`concat` operands must agree on every axis but {axis}: operand 0 is {ty0}, operand {k} is {ty}")
                };
                return self.sel_error(*at, msg, span);
            }
        }
        let mut inputs = Vec::new();
        if stack {
            let mut shape = first.shape.clone();
            shape.insert(axis, Dim::Const(1));
            for (id, _, at) in &parts {
                inputs.push(self.view_as(*id, shape.clone(), *at));
            }
        } else {
            inputs = parts.iter().map(|p| p.0).collect();
        }
        let mut shape = if stack {
            let mut s = first.shape.clone();
            s.insert(axis, Dim::Const(0));
            s
        } else {
            first.shape.clone()
        };
        // The joined axis: a constant, or terms over one product of symbols whose
        // coefficients add up (`B` and `B` give `B*2`; `B*4` and `B*4`, `B*8`).
        let mut total = 0u64;
        let mut sym: Option<Monomial> = None;
        let overflow = || format!("`{name}` along axis {axis}: the joined size overflows");
        for (_, n, _) in &parts {
            let d = if stack {
                Dim::Const(1)
            } else {
                n.shape[axis].clone()
            };
            match d {
                Dim::Const(c) => match total.checked_add(c) {
                    Some(t) => total = t,
                    None => return self.sel_error(span, overflow(), span),
                },
                other => {
                    let m = other.monomial();
                    match &mut sym {
                        None => sym = Some(m),
                        Some(s) if s.syms == m.syms => match s.coef.checked_add(m.coef) {
                            Some(c) => s.coef = c,
                            None => return self.sel_error(span, overflow(), span),
                        },
                        Some(s) => {
                            let msg = format!("`concat` along axis {axis} would add `{s}` and `{m}`, a size that is not a dim grafo can name (a dim is a constant times a product of symbols: `B`, `B*2`, `B*H*4`)");
                            return self.sel_error(span, msg, span);
                        }
                    }
                }
            }
        }
        shape[axis] = match sym {
            None => Dim::Const(total),
            Some(s) if total == 0 => Dim::from_monomial(s),
            Some(s) => {
                let msg = format!("`concat` along axis {axis} would give `{s} + {total}`, a size that is not a dim grafo can name (a dim is a constant times a product of symbols: `B`, `B*2`, `B*H*4`; sums of a symbol and a constant are not dims)");
                return self.sel_error(span, msg, span);
            }
        };
        let op_name: &'static str = if stack { "stack" } else { "concat" };
        let op = SelOp::Concat {
            name: op_name,
            axis,
        };
        Value::Tensor(self.sel_node(op, inputs, first.dtype, shape, span))
    }

    fn lower_split(&mut self, args: &[&Expr], span: Span) -> Value {
        let (x, xn) = self.sel_operand(args[0]);
        let rank = xn.shape.len();
        let axis = match args.get(2) {
            Some(a) => match self.sel_axis("split", a, rank) {
                Some(a) => a,
                None => return Value::Tensor(self.poisoned(span)),
            },
            None if rank == 0 => {
                return self.sel_error(
                    args[0].span(),
                    "`split` of a scalar: there is no axis to split",
                    span,
                )
            }
            None => 0,
        };
        let sizes_given = matches!(args[1], Expr::Array(_));
        let Some(list) = self.int_list(args[1]) else {
            return Value::Tensor(self.poisoned(span));
        };
        if xn.poisoned {
            return Value::Tensor(self.poisoned(span));
        }
        let ty = type_str(xn.dtype, &xn.shape);
        let Dim::Const(d) = xn.shape[axis] else {
            return self.split_symbolic(x, &xn, axis, &list, sizes_given, args, span);
        };
        let sizes: Vec<u64> = if sizes_given {
            // TF's `size_splits`: non-negative sizes, at most one -1 for the rest of the axis.
            let rest = list.iter().filter(|&&s| s == -1).count();
            let known: i128 = list.iter().filter(|&&s| s != -1).map(|&s| s as i128).sum();
            let fill = d as i128 - known;
            if list.iter().any(|&s| s < -1) || rest > 1 || (rest == 0 && fill != 0) || fill < 0 {
                let msg = format!("`split` sizes {list:?} must be non-negative (one may be -1, the rest of the axis) and add up to {d}, the size of axis {axis} of {ty}");
                return self.sel_error(args[1].span(), msg, span);
            }
            list.iter()
                .map(|&s| if s == -1 { fill as u64 } else { s as u64 })
                .collect()
        } else {
            let n = list[0];
            if n < 1 || d % n as u64 != 0 {
                let msg = format!("`split` into {n} equal pieces needs a positive count that divides {d}, the size of axis {axis} of {ty}");
                return self.sel_error(args[1].span(), msg, span);
            }
            vec![d / n as u64; n as usize]
        };
        let mut pieces = Vec::new();
        let mut at = 0u64;
        for s in sizes {
            let mut axes = vec![
                SliceSpec::Range {
                    start: 0,
                    end: None,
                    step: 1
                };
                axis + 1
            ];
            axes[axis] = SliceSpec::Range {
                start: at as i64,
                end: Some((at + s) as i64),
                step: 1,
            };
            let mut shape = xn.shape.clone();
            shape[axis] = Dim::Const(s);
            at += s;
            let op = SelOp::Slice {
                name: "split",
                axes,
            };
            pieces.push(Value::Tensor(self.sel_node(
                op,
                vec![x],
                xn.dtype,
                shape,
                span,
            )));
        }
        Value::Tuple(pieces)
    }

    /// `split(x, n, axis)` along a symbolic axis: a dim `c*S` (a constant `c` times a product
    /// of symbols) with `n` dividing `c` splits into `n` pieces of `S*(c/n)`, each an index of
    /// the `reshape` view `[.., n, S*(c/n), ..]` (so `B*2` gives two `B`s, `B*4` four `B`s);
    /// any other count would give a size that is not a dim, a compile error.
    #[allow(clippy::too_many_arguments)]
    fn split_symbolic(
        &mut self,
        x: NodeId,
        xn: &Node,
        axis: usize,
        list: &[i64],
        sizes_given: bool,
        args: &[&Expr],
        span: Span,
    ) -> Value {
        let ty = type_str(xn.dtype, &xn.shape);
        let dim = &xn.shape[axis];
        if sizes_given {
            let msg = format!("`split` into listed sizes needs a static axis; axis {axis} of {ty} is `{dim}` (split into a number of equal pieces instead)");
            return self.sel_error(args[1].span(), msg, span);
        }
        let m = dim.monomial();
        let n = list[0];
        if n < 1 || !m.coef.is_multiple_of(n as u64) {
            let msg = format!("`split` of axis {axis} (`{dim}`) into {n} equal pieces: the piece size `{dim}/{n}` is not a dim grafo can name; a symbolic axis splits by a factor of its constant (`B*2` into 2 pieces of `B`; axes from `concat`, `tile` or `reshape` have such sizes)");
            return self.sel_error(args[1].span(), msg, span);
        }
        let piece = Dim::from_monomial(Monomial {
            coef: m.coef / n as u64,
            syms: m.syms,
        });
        let mut viewed = xn.shape.clone();
        viewed[axis] = piece.clone();
        viewed.insert(axis, Dim::Const(n as u64));
        let view = self.view_as(x, viewed, span);
        let mut shape = xn.shape.clone();
        shape[axis] = piece;
        let whole = SliceSpec::Range {
            start: 0,
            end: None,
            step: 1,
        };
        let pieces = (0..n)
            .map(|i| {
                let mut axes = vec![whole; axis];
                axes.push(SliceSpec::Index(i));
                let op = SelOp::Slice {
                    name: "split",
                    axes,
                };
                Value::Tensor(self.sel_node(op, vec![view], xn.dtype, shape.clone(), span))
            })
            .collect();
        Value::Tuple(pieces)
    }

    fn lower_tile(&mut self, args: &[&Expr], span: Span) -> Value {
        let (x, xn) = self.sel_operand(args[0]);
        let Some(m) = self.int_list_exact(args[1]) else {
            return Value::Tensor(self.poisoned(span));
        };
        if xn.poisoned {
            return Value::Tensor(self.poisoned(span));
        }
        let ty = type_str(xn.dtype, &xn.shape);
        if m.len() != xn.shape.len() || m.iter().any(|&k| k < 0) {
            let msg =
                format!("`tile` needs one non-negative multiple per axis of {ty}; found {m:?}");
            return self.sel_error(args[1].span(), msg, span);
        }
        let mut shape = Vec::new();
        for (a, (d, &k)) in xn.shape.iter().zip(&m).enumerate() {
            shape.push(match d {
                Dim::Const(c) => match c.checked_mul(k as u64) {
                    Some(t) => Dim::Const(t),
                    None => {
                        let msg = format!("`tile` of axis {a} ({c}) by {k} overflows");
                        return self.sel_error(args[1].span(), msg, span);
                    }
                },
                symbolic => match symbolic.times(&Dim::Const(k as u64)) {
                    Some(d) => d,
                    None => {
                        let msg = format!("`tile` of axis {a} (`{symbolic}`) by {k} overflows");
                        return self.sel_error(args[1].span(), msg, span);
                    }
                },
            });
        }
        let op = SelOp::Tile {
            multiples: m.iter().map(|&k| k as u64).collect(),
        };
        Value::Tensor(self.sel_node(op, vec![x], xn.dtype, shape, span))
    }

    fn lower_pad(&mut self, args: &[&Expr], span: Span) -> Value {
        let (x, xn) = self.sel_operand(args[0]);
        let pairs_expr = args[1];
        let bad = |lw: &mut Self| {
            lw.sel_error(
                pairs_expr.span(),
                "`pad` paddings are a list of `[before, after]` pairs of non-negative integer literals, one per axis",
                span,
            )
        };
        let Expr::Array(rows) = pairs_expr else {
            return bad(self);
        };
        let mut paddings = Vec::new();
        for row in &rows.elems {
            let Expr::Array(pair) = row else {
                return bad(self);
            };
            let v: Option<Vec<i64>> = pair.elems.iter().map(|e| self.literal_int(e)).collect();
            match v.as_deref() {
                Some(&[b, a]) if b >= 0 && a >= 0 => paddings.push((b as u64, a as u64)),
                _ => return bad(self),
            }
        }
        let value = match args.get(2) {
            Some(v) => {
                let id = self.operand(v);
                self.resolve_weak_to(id, xn.dtype, v.span())
            }
            None => {
                let zero = Scalar::Int(0).convert(xn.dtype);
                self.push(
                    Op::Const {
                        value: zero,
                        weak: false,
                    },
                    vec![],
                    xn.dtype,
                    vec![],
                    span,
                )
            }
        };
        let vn = self.graph.node(value).clone();
        if xn.poisoned || vn.poisoned {
            return Value::Tensor(self.poisoned(span));
        }
        let ty = type_str(xn.dtype, &xn.shape);
        if paddings.len() != xn.shape.len() {
            let msg = format!(
                "`pad` needs one `[before, after]` pair per axis of {ty}; found {}",
                paddings.len()
            );
            return self.sel_error(pairs_expr.span(), msg, span);
        }
        if vn.dtype != xn.dtype || !vn.shape.is_empty() {
            let msg = format!(
                "the `pad` value must be a scalar of the tensor's dtype {}; found {}",
                xn.dtype,
                type_str(vn.dtype, &vn.shape)
            );
            return self.sel_error(args[2].span(), msg, span);
        }
        let mut shape = Vec::new();
        for (a, (d, (b, e))) in xn.shape.iter().zip(&paddings).enumerate() {
            shape.push(match d {
                Dim::Const(c) => match c.checked_add(*b).and_then(|t| t.checked_add(*e)) {
                    Some(t) => Dim::Const(t),
                    None => {
                        let msg = format!("padding axis {a} ({c}) by {b} and {e} overflows");
                        return self.sel_error(pairs_expr.span(), msg, span);
                    }
                },
                _ if b + e == 0 => d.clone(),
                s => {
                    let msg = format!("padding the symbolic axis {a} (`{s}`) gives a size that is not a dim grafo can name; pad only static axes");
                    return self.sel_error(pairs_expr.span(), msg, span);
                }
            });
        }
        let op = SelOp::Pad { paddings };
        Value::Tensor(self.sel_node(op, vec![x, value], xn.dtype, shape, span))
    }

    fn lower_expand_squeeze(&mut self, name: &str, args: &[&Expr], span: Span) -> Value {
        let (x, xn) = self.sel_operand(args[0]);
        let rank = xn.shape.len();
        let ty = type_str(xn.dtype, &xn.shape);
        if name == "expand_dims" {
            let Some(axis) = self.sel_axis(name, args[1], rank + 1) else {
                return Value::Tensor(self.poisoned(span));
            };
            let mut shape = xn.shape.clone();
            shape.insert(axis, Dim::Const(1));
            return Value::Tensor(self.view_as(x, shape, span));
        }
        let drop: Vec<usize> = match args.get(1) {
            None => (0..rank)
                .filter(|&a| xn.shape[a] == Dim::Const(1))
                .collect(),
            Some(a) => {
                let Some(list) = self.int_list(a) else {
                    return Value::Tensor(self.poisoned(span));
                };
                let mut v = Vec::new();
                for k in list {
                    let r = rank as i64;
                    if k < -r || k >= r {
                        let msg = format!("`squeeze` axis {k} is out of range for {ty}");
                        return self.sel_error(a.span(), msg, span);
                    }
                    let k = if k < 0 { (k + r) as usize } else { k as usize };
                    if xn.shape[k] != Dim::Const(1) {
                        let msg = format!(
                            "`squeeze` axis {k} has size {}, not 1 (the tensor is {ty})",
                            xn.shape[k]
                        );
                        return self.sel_error(a.span(), msg, span);
                    }
                    v.push(k);
                }
                v
            }
        };
        let shape: Shape = (0..rank)
            .filter(|a| !drop.contains(a))
            .map(|a| xn.shape[a].clone())
            .collect();
        Value::Tensor(self.view_as(x, shape, span))
    }

    fn lower_gather(&mut self, args: &[&Expr], span: Span) -> Value {
        let (x, xn) = self.sel_operand(args[0]);
        let (ind, indn) = self.sel_operand(args[1]);
        let axis = match args.get(2) {
            Some(a) => self.sel_axis("gather", a, xn.shape.len()),
            None if xn.shape.is_empty() => {
                self.diag.error(
                    args[0].span(),
                    "`gather` needs a tensor of rank 1 or more; found a scalar",
                );
                None
            }
            None => Some(0),
        };
        let Some(axis) = axis else {
            return Value::Tensor(self.poisoned(span));
        };
        if xn.poisoned || indn.poisoned {
            return Value::Tensor(self.poisoned(span));
        }
        if !indn.dtype.is_int() {
            let msg = format!(
                "`gather` indices must be i32 or i64; found {}",
                type_str(indn.dtype, &indn.shape)
            );
            return self.sel_error(args[1].span(), msg, span);
        }
        let mut shape = xn.shape[..axis].to_vec();
        shape.extend(indn.shape.iter().cloned());
        shape.extend(xn.shape[axis + 1..].iter().cloned());
        let op = SelOp::Gather { axis };
        Value::Tensor(self.sel_node(op, vec![x, ind], xn.dtype, shape, span))
    }

    fn lower_one_hot(
        &mut self,
        args: &[&Expr],
        span: Span,
        turbofish: Option<&(String, Span)>,
    ) -> Value {
        let (ind, indn) = self.sel_operand(args[0]);
        let depth = match self.literal_int(args[1]) {
            Some(d) if d >= 0 => d as u64,
            _ => {
                return self.sel_error(
                    args[1].span(),
                    "`one_hot` depth must be a non-negative integer literal or `const`",
                    span,
                )
            }
        };
        let dt = match turbofish {
            None => None,
            Some((t, ts)) => match DType::from_name(t) {
                Some(d) => Some(d),
                None => {
                    let msg = format!("unknown dtype `{t}`: one of f32, f64, i32, i64, bool");
                    return self.sel_error(*ts, msg, span);
                }
            },
        };
        let (on, off) = if args.len() == 4 {
            let (a, b) = (self.operand(args[2]), self.operand(args[3]));
            let (a, b) = self.coerce(a, b, span);
            match dt {
                Some(dt) => (
                    self.resolve_weak_to(a, dt, span),
                    self.resolve_weak_to(b, dt, span),
                ),
                None => (self.concrete(a), self.concrete(b)),
            }
        } else {
            let dt = dt.unwrap_or(DType::F32);
            let mut c = |v: i64| {
                self.push(
                    Op::Const {
                        value: Scalar::Int(v).convert(dt),
                        weak: false,
                    },
                    vec![],
                    dt,
                    vec![],
                    span,
                )
            };
            (c(1), c(0))
        };
        let (onn, offn) = (self.graph.node(on).clone(), self.graph.node(off).clone());
        if indn.poisoned || onn.poisoned || offn.poisoned {
            return Value::Tensor(self.poisoned(span));
        }
        if !indn.dtype.is_int() {
            let msg = format!(
                "`one_hot` indices must be i32 or i64; found {}",
                type_str(indn.dtype, &indn.shape)
            );
            return self.sel_error(args[0].span(), msg, span);
        }
        if !onn.shape.is_empty() || !offn.shape.is_empty() || onn.dtype != offn.dtype {
            let msg = format!(
                "`one_hot` on and off values must be scalars of one dtype; found {} and {}",
                type_str(onn.dtype, &onn.shape),
                type_str(offn.dtype, &offn.shape)
            );
            return self.sel_error(args[2].span(), msg, span);
        }
        let mut shape = indn.shape.clone();
        shape.push(Dim::Const(depth));
        let op = SelOp::OneHot { depth };
        Value::Tensor(self.sel_node(op, vec![ind, on, off], onn.dtype, shape, span))
    }

    fn lower_arg_reduce(&mut self, name: &str, args: &[&Expr], span: Span) -> Value {
        let (x, xn) = self.sel_operand(args[0]);
        let rank = xn.shape.len();
        let axis = match args.get(1) {
            Some(a) => self.sel_axis(name, a, rank),
            None if rank == 0 => {
                let msg = format!("`{name}` needs a tensor of rank 1 or more; found a scalar");
                self.diag.error(args[0].span(), msg);
                None
            }
            None => Some(0),
        };
        let Some(axis) = axis else {
            return Value::Tensor(self.poisoned(span));
        };
        if xn.poisoned {
            return Value::Tensor(self.poisoned(span));
        }
        let ty = type_str(xn.dtype, &xn.shape);
        if xn.dtype == DType::Bool {
            let msg = format!("`{name}` needs a number tensor; found {ty}");
            return self.sel_error(args[0].span(), msg, span);
        }
        let mut shape = xn.shape.clone();
        shape.remove(axis);
        let out_empty = shape.contains(&Dim::Const(0));
        if xn.shape[axis] == Dim::Const(0) && !out_empty {
            let msg = format!("`{name}` over the empty axis {axis} of {ty} has no answer");
            return self.sel_error(args.get(1).map_or(span, |a| a.span()), msg, span);
        }
        let op = SelOp::ArgReduce {
            axis,
            min: name == "argmin",
        };
        Value::Tensor(self.sel_node(op, vec![x], DType::I64, shape, span))
    }

    /// A `range` argument: an integer or float literal (or `const`), or a symbol for `n`.
    fn range_arg(&mut self, e: &Expr) -> Option<Result<Scalar, String>> {
        if let Expr::Path(p) = e {
            if let Some(id) = p.path.get_ident() {
                let s = id.to_string();
                if self.symbols.contains(&s) {
                    return Some(Err(s));
                }
            }
        }
        let id = self.operand(e);
        match self.graph.node(id).op {
            Op::Const { value, .. } if !matches!(value, Scalar::Bool(_)) => Some(Ok(value)),
            _ => {
                self.diag.error(e.span(), "a `range` argument must be a number literal, a `const` or a `for` variable (or, for `n`, a symbolic dim of the signature)");
                None
            }
        }
    }

    fn lower_range(
        &mut self,
        args: &[&Expr],
        span: Span,
        turbofish: Option<&(String, Span)>,
    ) -> Value {
        let vals: Option<Vec<Result<Scalar, String>>> =
            args.iter().map(|a| self.range_arg(a)).collect();
        let Some(vals) = vals else {
            return Value::Tensor(self.poisoned(span));
        };
        let (start, limit, delta) = match vals.as_slice() {
            [n] => (Ok(Scalar::Int(0)), n.clone(), Ok(Scalar::Int(1))),
            [s, l] => (s.clone(), l.clone(), Ok(Scalar::Int(1))),
            [s, l, d] => (s.clone(), l.clone(), d.clone()),
            _ => unreachable!("arity checked"),
        };
        let any_float = [&start, &limit, &delta]
            .iter()
            .any(|v| matches!(v, Ok(Scalar::Float(_))));
        let dt = match turbofish {
            Some((t, ts)) => match DType::from_name(t) {
                Some(DType::Bool) | None => {
                    let msg =
                        format!("`range` dtype must be one of i32, i64, f32, f64; found `{t}`");
                    return self.sel_error(*ts, msg, span);
                }
                Some(d) => d,
            },
            None if any_float => DType::F32,
            None => DType::I32,
        };
        if any_float && !dt.is_float() {
            return self.sel_error(
                span,
                format!("`range::<{dt}>` takes integer arguments"),
                span,
            );
        }
        let (Ok(start), Ok(delta)) = (start, delta) else {
            return self.sel_error(
                span,
                "only `n` (or `limit` with start 0 and delta 1) may be a symbolic dim in `range`",
                span,
            );
        };
        let (start, delta) = (start.convert(dt), delta.convert(dt));
        let n = match limit {
            Err(sym) => {
                if start.as_f64() != 0.0 || delta.as_f64() != 1.0 {
                    let msg = format!("`range` up to the symbolic dim `{sym}` needs start 0 and delta 1 (its length would not be a dim grafo can name)");
                    return self.sel_error(span, msg, span);
                }
                self.subst_dim(&Dim::Sym(sym))
            }
            Ok(limit) => {
                let (s, l, d) = (start.as_f64(), limit.convert(dt).as_f64(), delta.as_f64());
                if d == 0.0 {
                    return self.sel_error(span, "`range` delta must not be 0", span);
                }
                if (d > 0.0 && s > l) || (d < 0.0 && s < l) {
                    let msg = format!("`range({s}, {l}, {d})`: TF needs start <= limit when delta > 0 and start >= limit when delta < 0");
                    return self.sel_error(span, msg, span);
                }
                let count = if dt.is_float() {
                    ((l - s) / d).abs().ceil()
                } else {
                    let (s, l, d) = (s as i128, l as i128, d as i128);
                    (((l - s).abs() + d.abs() - 1) / d.abs()) as f64
                };
                Dim::Const(count as u64)
            }
        };
        let op = SelOp::Range { start, delta };
        Value::Tensor(self.sel_node(op, vec![], dt, vec![n], span))
    }
}

/// The `graph()` attributes of a selection node.
pub fn attrs(op: &SelOp) -> Vec<(String, String)> {
    match op {
        SelOp::Slice { axes, .. } => {
            let parts: Vec<String> = axes
                .iter()
                .map(|a| match a {
                    SliceSpec::Index(i) => i.to_string(),
                    SliceSpec::IndexInput(k) => format!("input{k}"),
                    SliceSpec::Range { start, end, step } => {
                        let end = end.map(|e| e.to_string()).unwrap_or_default();
                        if *step == 1 {
                            format!("{start}..{end}")
                        } else {
                            format!("{start}..{end};{step}")
                        }
                    }
                    SliceSpec::Strided { begin, end, stride } => {
                        // A masked bound (i64::MIN/MAX, see `tf_dense_spec`) prints as NumPy's empty one.
                        let (masked_begin, masked_end) = if *stride > 0 {
                            (i64::MIN, i64::MAX)
                        } else {
                            (i64::MAX, i64::MIN)
                        };
                        let bound = |v: i64, masked: i64| {
                            if v == masked {
                                String::new()
                            } else {
                                v.to_string()
                            }
                        };
                        format!(
                            "{}:{}:{stride}",
                            bound(*begin, masked_begin),
                            bound(*end, masked_end)
                        )
                    }
                })
                .collect();
            vec![("axes".into(), format!("[{}]", parts.join(", ")))]
        }
        SelOp::Concat { axis, .. } | SelOp::Gather { axis } | SelOp::ArgReduce { axis, .. } => {
            vec![("axis".into(), axis.to_string())]
        }
        SelOp::Tile { multiples } => vec![("multiples".into(), format!("{multiples:?}"))],
        SelOp::Pad { paddings } => vec![("paddings".into(), format!("{paddings:?}"))],
        SelOp::OneHot { depth } => vec![("depth".into(), depth.to_string())],
        SelOp::Range { start, delta } => vec![
            ("start".into(), start.to_string()),
            ("delta".into(), delta.to_string()),
        ],
        SelOp::Values { values } => vec![("value".into(), values_text(values))],
    }
}

/// An array constant's values for `graph()`: all of them up to [`SHOWN_VALUES`], else the
/// first ones and the count.
fn values_text(values: &[Scalar]) -> String {
    let shown: Vec<String> = values
        .iter()
        .take(SHOWN_VALUES)
        .map(|v| v.to_string())
        .collect();
    if values.len() > SHOWN_VALUES {
        format!("[{}, ...] ({} values)", shown.join(", "), values.len())
    } else {
        format!("[{}]", shown.join(", "))
    }
}

/// How many values of an array constant `graph()` lists.
const SHOWN_VALUES: usize = 16;
