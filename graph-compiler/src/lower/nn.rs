//! Lowering of the neural-network ops: the pooling ops, `max_pool2d(x, ksize, strides, padding)`
//! and `avg_pool2d(...)`, `conv2d(x, k, stride, padding [, dilations])`,
//! `depthwise_conv2d(x, k, stride, padding [, dilations])`,
//! `conv2d_transpose(x, k, output_shape, strides, padding)`, `bias_add`, the softmaxes and
//! `resize(x, [h, w], method)`,
//! with TensorFlow's argument forms:
//! a window, stride or dilation is an integer (`2`), a list `[rows, columns]`, or TF's
//! 4-list `[1, rows, columns, 1]`; a padding is `SAME`, `VALID` or, for `conv2d`,
//! `depthwise_conv2d` and `max_pool2d`, TF's explicit `[[top, bottom], [left, right]]`
//! (or its NHWC form with zero pairs on the batch and channels), lowered to a `pad` (of
//! zeros, or of the lowest value for `max_pool2d`) then the `VALID` op.

use super::args::resize_method_of;
use super::{padding_of, Call, Lowerer};
use crate::infer;
use crate::ir::*;
use syn::Expr;

impl Lowerer<'_> {
    /// `max_pool2d(x, ksize, strides, padding)` / `avg_pool2d(...)`.
    pub(super) fn pool_call(&mut self, kind: PoolKind, call: &Call) -> NodeId {
        let (name, args, span) = (call.name, call.args, call.span);
        let x = self.operand(args[0]);
        let ksize = self.window_pair(name, "window size", args[1]);
        let strides = self.window_pair(name, "stride", args[2]);
        let (x, padding) = match self.padding_arg(name, args[3]) {
            Some(PaddingArg::Mode(p)) => (x, Some(p)),
            Some(PaddingArg::Explicit(pads)) if kind == PoolKind::Max => {
                // Padding never wins a window: it is the lowest value of the dtype.
                let dt = self.graph.node(x).dtype;
                let lowest = match dt {
                    DType::F32 | DType::F64 => f64::NEG_INFINITY,
                    DType::I32 => f64::from(i32::MIN),
                    DType::I64 => i64::MIN as f64,
                    DType::Bool => 0.0,
                };
                (
                    self.pad_spatial(x, pads, lowest, args[3]),
                    Some(Padding::Valid),
                )
            }
            // `avg_pool2d`'s row takes only `SAME` or `VALID`: its kind check reported a list.
            Some(PaddingArg::Explicit(_)) | None => (x, None),
        };
        let (Some(ksize), Some(strides), Some(padding)) = (ksize, strides, padding) else {
            return self.poisoned(span);
        };
        let n = self.graph.node(x).clone();
        let r = infer::pool2d(kind, (n.dtype, &n.shape), ksize, strides, padding);
        let op = Op::Pool {
            kind,
            ksize,
            strides,
            padding,
        };
        self.typed(op, vec![x], r, span)
    }

    /// `conv2d(x, k, stride, padding [, dilations])` or `depthwise_conv2d(...)`.
    pub(super) fn conv_general(&mut self, depthwise: bool, call: &Call) -> NodeId {
        let (name, args, span) = (call.name, call.args, call.span);
        let (x, k) = (self.operand(args[0]), self.operand(args[1]));
        let stride = match self.literal_int(args[2]) {
            Some(s) if s >= 1 => Some(s as usize),
            _ => {
                self.diag.error(
                    args[2].span(),
                    format!("`{name}` stride must be a positive integer literal"),
                );
                None
            }
        };
        let (x, padding) = match self.padding_arg(name, args[3]) {
            Some(PaddingArg::Mode(p)) => (x, Some(p)),
            Some(PaddingArg::Explicit(pads)) => (
                self.pad_spatial(x, pads, 0.0, args[3]),
                Some(Padding::Valid),
            ),
            None => (x, None),
        };
        let dilation = match args.get(4) {
            Some(e) => self.window_pair(name, "dilation", e),
            None => Some([1, 1]),
        };
        let (Some(stride), Some(padding), Some(dilation)) = (stride, padding, dilation) else {
            return self.poisoned(span);
        };
        let (nx, nk) = (self.graph.node(x).clone(), self.graph.node(k).clone());
        if !depthwise && dilation == [1, 1] {
            // A plain convolution: conv.rs's im2col/GEMM path.
            let r = infer::conv2d(
                (nx.dtype, &nx.shape),
                (nk.dtype, &nk.shape),
                stride,
                padding,
            );
            return self.typed(Op::Conv2d { stride, padding }, vec![x, k], r, span);
        }
        let r = infer::conv_general(
            (nx.dtype, &nx.shape),
            (nk.dtype, &nk.shape),
            stride,
            dilation,
            padding,
            depthwise,
        );
        let op = Op::ConvGeneral {
            stride,
            dilation,
            padding,
            depthwise,
        };
        self.typed(op, vec![x, k], r, span)
    }

    /// `conv2d_transpose(x, k, output_shape, strides, padding)`: TF's `tf.nn.conv2d_transpose`,
    /// the input gradient of the `conv2d` that maps `output_shape` to `x`'s shape, with filters
    /// `[KH, KW, out, in]`. The `conv2d` of `output_shape` by `k` must give `x`'s shape exactly
    /// (as TF checks), so the batch of `output_shape` is `x`'s (a symbol included).
    pub(super) fn lower_conv2d_transpose(&mut self, call: &Call) -> NodeId {
        let (name, args, span) = (call.name, call.args, call.span);
        let (x, k) = (self.operand(args[0]), self.operand(args[1]));
        let dims = self.dim_list(args[2], false);
        let strides = self.window_pair(name, "stride", args[3]);
        // The row's kind check accepted only `SAME` or `VALID`.
        let padding = padding_of(args[4]);
        let (Some(dims), Some(strides), Some(padding)) = (dims, strides, padding) else {
            return self.poisoned(span);
        };
        let out: Shape = dims.into_iter().flatten().collect();
        if strides[0] != strides[1] {
            let msg = format!(
                "`{name}` takes one stride for rows and columns (as grafo's `conv2d`), found {strides:?}"
            );
            self.diag.error(args[3].span(), msg);
            return self.poisoned(span);
        }
        let stride = strides[0];
        let (nx, nk) = (self.graph.node(x).clone(), self.graph.node(k).clone());
        if nx.poisoned || nk.poisoned {
            return self.poisoned(span);
        }
        let r = conv2d_transpose_shape(
            (nx.dtype, &nx.shape),
            (nk.dtype, &nk.shape),
            &out,
            stride,
            padding,
        );
        let error_span = match &r {
            Err((2, _)) => args[2].span(),
            Err((1, _)) => args[1].span(),
            _ => span,
        };
        let r = r.map_err(|(_, msg)| msg);
        let op = Op::Conv2dBackpropInput {
            stride,
            dilation: [1, 1],
            padding,
            depthwise: false,
        };
        self.typed_with(vec![x, k], r.map(|t| ((), t)), |()| op, error_span, span)
    }

    /// A window size or stride: `k` (both axes), `[rows, columns]`, or `[1, rows, columns, 1]`
    /// (TF's NHWC form, which cannot pool over the batch or the channels). Reports the error.
    pub(super) fn window_pair(&mut self, op: &str, what: &str, e: &Expr) -> Option<[usize; 2]> {
        let bad = |lw: &mut Self, e: &Expr, why: &str| {
            lw.diag
                .error(e.span(), format!("`{op}` {what} must be {why}"));
            None
        };
        let positive = |v: i64| (v >= 1).then_some(v as usize);
        if let Some(v) = self.literal_int(e) {
            return match positive(v) {
                Some(k) => Some([k, k]),
                None => bad(self, e, "at least 1"),
            };
        }
        let form = "an integer literal, `[rows, columns]` or `[1, rows, columns, 1]`";
        let Expr::Array(a) = super::unwrapped(e) else {
            return bad(self, e, form);
        };
        let mut vals = Vec::new();
        for el in &a.elems {
            match self.literal_int(el) {
                Some(v) => vals.push(v),
                None => match self.int_out_of_range(el, "this window size") {
                    Some(msg) => {
                        self.diag.error(el.span(), msg);
                        return None;
                    }
                    None => return bad(self, el, "a list of integer literals"),
                },
            }
        }
        let pair = match vals.as_slice() {
            [h, w] => [*h, *w],
            [1, h, w, 1] => [*h, *w],
            [_, _, _, _] => {
                return bad(
                    self,
                    e,
                    "1 on the batch and channel axes in the 4-element form (pooling runs over rows and columns only)",
                )
            }
            _ => return bad(self, e, form),
        };
        match (positive(pair[0]), positive(pair[1])) {
            (Some(h), Some(w)) => Some([h, w]),
            _ => bad(self, e, "at least 1 on each axis"),
        }
    }
}

/// A padding argument: TF's mode, or explicit `(before, after)` rows and columns.
pub(super) enum PaddingArg {
    Mode(Padding),
    Explicit([(u64, u64); 2]),
}

impl Lowerer<'_> {
    /// `SAME`, `VALID`, or TF's explicit padding: `[[top, bottom], [left, right]]` or
    /// `[[0, 0], [top, bottom], [left, right], [0, 0]]` (NHWC), of non-negative integer
    /// literals. Reports the error at the argument.
    pub(super) fn padding_arg(&mut self, op: &str, e: &Expr) -> Option<PaddingArg> {
        if let Some(p) = padding_of(e) {
            return Some(PaddingArg::Mode(p));
        }
        let form = "`SAME`, `VALID` or TensorFlow's explicit `[[top, bottom], [left, right]]` (or `[[0, 0], [top, bottom], [left, right], [0, 0]]`) of non-negative integer literals";
        let bad = |lw: &mut Self, at: &Expr, why: String| {
            lw.diag
                .error(at.span(), format!("`{op}` padding must be {why}"));
            None
        };
        let Expr::Array(rows) = super::unwrapped(e) else {
            return bad(self, e, form.to_string());
        };
        let mut pairs = Vec::new();
        for row in &rows.elems {
            let Expr::Array(pair) = super::unwrapped(row) else {
                return bad(self, row, form.to_string());
            };
            let mut vals = Vec::new();
            for el in &pair.elems {
                if let Some(msg) = self.int_out_of_range(el, "this padding") {
                    self.diag.error(el.span(), msg);
                    return None;
                }
                match self.literal_int(el) {
                    Some(v) if v >= 0 => vals.push(v as u64),
                    _ => return bad(self, el, form.to_string()),
                }
            }
            match vals.as_slice() {
                [b, a] => pairs.push((*b, *a)),
                _ => return bad(self, row, form.to_string()),
            }
        }
        match pairs.as_slice() {
            [h, w] => Some(PaddingArg::Explicit([*h, *w])),
            [(0, 0), h, w, (0, 0)] => Some(PaddingArg::Explicit([*h, *w])),
            [_, _, _, _] => bad(
                self,
                e,
                "zero on the batch and channel axes in the 4-pair form (NHWC: only rows and columns are padded)".to_string(),
            ),
            _ => bad(self, e, form.to_string()),
        }
    }

    /// `x` (NHWC) padded by `pads` on its rows and columns with `fill`: the explicit padding of
    /// a convolution or max pooling. Reports an error at `arg` (and gives a poisoned node) when
    /// a padded axis is symbolic; leaves `x` as it is when it is not rank 4, for the op's own
    /// check to report.
    fn pad_spatial(&mut self, x: NodeId, pads: [(u64, u64); 2], fill: f64, arg: &Expr) -> NodeId {
        let n = self.graph.node(x).clone();
        if n.poisoned || n.shape.len() != 4 || pads.iter().all(|&(b, a)| b == 0 && a == 0) {
            return x;
        }
        let mut shape = n.shape.clone();
        for (axis, &(b, a)) in [1, 2].iter().zip(&pads) {
            let Dim::Const(size) = shape[*axis] else {
                let msg = format!(
                    "explicit padding needs a static {} count: the input is {} (use `SAME` or `VALID` with a symbolic size)",
                    if *axis == 1 { "row" } else { "column" },
                    type_str(n.dtype, &n.shape)
                );
                self.diag.error(arg.span(), msg);
                return self.poisoned(arg.span());
            };
            match size.checked_add(b).and_then(|t| t.checked_add(a)) {
                Some(t) => shape[*axis] = Dim::Const(t),
                None => {
                    self.diag.error(
                        arg.span(),
                        format!("padding {size} by {b} and {a} overflows"),
                    );
                    return self.poisoned(arg.span());
                }
            }
        }
        let span = arg.span();
        let value = self.constant(fill, n.dtype, span);
        let paddings = vec![(0, 0), pads[0], pads[1], (0, 0)];
        self.sel(
            crate::ir::SelOp::Pad { paddings },
            vec![x, value],
            n.dtype,
            shape,
            span,
        )
    }

    /// `bias_add(x, b)`.
    pub(super) fn lower_bias_add(&mut self, call: &Call) -> NodeId {
        let (x, b) = (self.operand(call.args[0]), self.operand(call.args[1]));
        let (nx, nb) = (self.graph.node(x).clone(), self.graph.node(b).clone());
        let r = infer::bias_add((nx.dtype, &nx.shape), (nb.dtype, &nb.shape));
        self.typed(Op::BiasAdd, vec![x, b], r, call.span)
    }

    /// `softmax(x [, axis])` and `log_softmax(x [, axis])`, over the last axis by default.
    pub(super) fn lower_softmax(&mut self, log: bool, call: &Call) -> NodeId {
        let (args, span, name) = (call.args, call.span, call.name);
        let x = self.operand(args[0]);
        let n = self.graph.node(x).clone();
        // The row's kind check accepted only an integer literal.
        let axis = args.get(1).and_then(|a| self.literal_int(a)).unwrap_or(-1);
        if n.poisoned {
            return self.poisoned(span);
        }
        let r = infer::normalize_axes(name, &[axis], n.shape.len(), &n.shape)
            .and_then(|a| infer::unary(name, true, (n.dtype, &n.shape)).map(|t| (a[0], t)));
        let make = |axis| Op::Softmax { axis, log };
        let error_span = args.get(1).map_or(span, |a| a.span());
        self.typed_with(vec![x], r, make, error_span, span)
    }
}

impl Lowerer<'_> {
    /// `resize(x, [h, w], method)`: TF 2's `tf.image.resize` of NHWC (or HWC) images, the
    /// size a shape list (literals, symbols, products such as `H * 2`), positive.
    pub(super) fn lower_resize(&mut self, call: &Call) -> NodeId {
        let (args, span) = (call.args, call.span);
        let x = self.operand(args[0]);
        let x = self.concrete(x);
        // The row's kind check accepted only `NEAREST` or `BILINEAR`.
        let method = resize_method_of(args[2]);
        let size = self.dim_list(args[1], false);
        let (Some(method), Some(size)) = (method, size) else {
            return self.poisoned(span);
        };
        let size: Vec<Dim> = size.into_iter().flatten().collect();
        if size.len() != 2 || size.contains(&Dim::Const(0)) {
            let msg = format!(
                "`resize`'s `size` must be `[height, width]`, both positive, found {}",
                shape_str(&size)
            );
            self.diag.error(args[1].span(), msg);
            return self.poisoned(span);
        }
        let n = self.graph.node(x).clone();
        if n.poisoned {
            return self.poisoned(span);
        }
        match infer::resize((n.dtype, &n.shape), &size, method) {
            Ok((dt, shape)) => self.sel(SelOp::Resize { method }, vec![x], dt, shape, span),
            Err(msg) => {
                self.diag.error(args[0].span(), msg);
                self.poisoned(span)
            }
        }
    }
}

/// The dtype and shape of `conv2d_transpose(x, k, output_shape, stride, padding)`, or the
/// message with the argument at fault (1 the filters, 2 the output shape, 0 the call).
fn conv2d_transpose_shape(
    x: (DType, &[Dim]),
    k: (DType, &[Dim]),
    out: &[Dim],
    stride: usize,
    padding: Padding,
) -> Result<(DType, Shape), (usize, String)> {
    let op = "conv2d_transpose";
    let dt = infer::same_dtype(op, x.0, k.0, x.1, k.1).map_err(|e| (0, e))?;
    if !dt.is_float() {
        let msg = format!("`{op}` needs float tensors, found {}", type_str(x.0, x.1));
        return Err((0, msg));
    }
    let (sx, sk) = (x.1, k.1);
    if sx.len() != 4 {
        return Err((
            0,
            format!(
                "`{op}` input must be rank 4 (NHWC), found {}",
                shape_str(sx)
            ),
        ));
    }
    if sk.len() != 4 {
        let msg = format!(
            "`{op}` filters must be rank 4 [KH, KW, out, in], found {}",
            shape_str(sk)
        );
        return Err((1, msg));
    }
    if out.len() != 4 {
        let msg = format!(
            "`{op}`'s `output_shape` must be rank 4 [N, H, W, out], found {}",
            shape_str(out)
        );
        return Err((2, msg));
    }
    if sx[3] != sk[3] {
        let msg = format!(
            "`{op}` channels differ: input is {}, filters are {} (input axis 3 is {}, filters axis 3 (`in`) is {})",
            shape_str(sx),
            shape_str(sk),
            sx[3],
            sk[3]
        );
        return Err((1, msg));
    }
    if out[3] != sk[2] {
        let msg = format!(
            "`{op}`'s `output_shape` {} has {} channels but the filters {} give {} (axis 2, `out`)",
            shape_str(out),
            out[3],
            shape_str(sk),
            sk[2]
        );
        return Err((2, msg));
    }
    // The convolution this op is the gradient of must map `output_shape` onto `x`.
    let forward = infer::conv2d((dt, out), (dt, sk), stride, padding).map_err(|e| {
        (
            2,
            format!("`{op}`'s `output_shape` has no `conv2d` onto the input: {e}"),
        )
    })?;
    if forward.1 != sx {
        let pad = if padding == Padding::Same {
            "SAME"
        } else {
            "VALID"
        };
        let msg = format!(
            "`{op}`'s `output_shape` {} does not match the input {}: `conv2d` of {} by {} with stride {stride} and {pad} padding gives {}",
            shape_str(out),
            shape_str(sx),
            shape_str(out),
            shape_str(sk),
            shape_str(&forward.1)
        );
        return Err((2, msg));
    }
    Ok((dt, out.to_vec()))
}
