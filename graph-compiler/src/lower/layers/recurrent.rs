//! The attention and recurrent layers: `multi_head_attention` (Keras' `MultiHeadAttention`,
//! with its causal mask), `lstm_cell` and `gru_cell` (Keras' `LSTMCell` and `GRUCell`, one
//! step), written in matmuls, reshapes, slices and elementwise ops.

use super::{LayerCall, Lowerer, Value};
use crate::ir::*;

impl Lowerer<'_> {
    /// `multi_head_attention(layer, query, value [, key] [, use_causal_mask])` over
    /// `query [B, T, D]`, `value [B, S, D]` and `key` (`value` when absent), as Keras'
    /// `MultiHeadAttention` with `key_dim = D / H`: each input projected by its dense layer
    /// and split into `H` heads, the query scaled by `1 / sqrt(D / H)`, the scores' softmax
    /// over the keys (with a causal mask, a query position `i` sees key positions `j <= i`),
    /// the heads merged and projected by `output`.
    pub(super) fn layer_attention(&mut self, call: &LayerCall) -> Option<NodeId> {
        let span = call.span;
        let (d, h) = (call.inst.dims[0], call.inst.dims[1]);
        let q = self.layer_input(call, 1, "query", 3..=3, Some((d, "D")));
        let v = self.layer_input(call, 2, "value", 3..=3, Some((d, "D")));
        // After the value: the key, then `use_causal_mask`; a lone bool literal is the mask.
        let mut causal = false;
        let mut key = None;
        let n = call.args.len();
        let mask_arg = match n {
            4 if self.host_literal_bool(call.args[3]).is_some() => Some(call.args[3]),
            5 => Some(call.args[4]),
            _ => None,
        };
        if n == 5 || (n == 4 && mask_arg.is_none()) {
            key = Some(self.layer_input(call, 3, "key", 3..=3, Some((d, "D")))?);
        }
        if let Some(a) = mask_arg {
            match self.host_literal_bool(a) {
                Some(b) => causal = b,
                None => {
                    let msg = "`multi_head_attention`'s `use_causal_mask` is `true` or `false` (Keras' `use_causal_mask=`), after the optional key";
                    self.diag.error(a.span(), msg);
                    return None;
                }
            }
        }
        let (q, v) = (q?, v?);
        let k = key.unwrap_or(v);
        let (nq, nv, nk) = (
            self.graph.node(q).clone(),
            self.graph.node(v).clone(),
            self.graph.node(k).clone(),
        );
        if nq.shape[0] != nv.shape[0] {
            let msg = format!(
                "`multi_head_attention`'s query and value must have one batch: query is {}, value is {}",
                type_str(nq.dtype, &nq.shape),
                type_str(nv.dtype, &nv.shape)
            );
            self.diag.error(call.args[2].span(), msg);
            return None;
        }
        if nk.shape != nv.shape {
            let msg = format!(
                "`multi_head_attention`'s key and value must have one shape: key is {}, value is {}",
                type_str(nk.dtype, &nk.shape),
                type_str(nv.dtype, &nv.shape)
            );
            self.diag.error(call.args[3].span(), msg);
            return None;
        }
        let dt = call.inst.dtype;
        let (batch, t, s) = (
            nq.shape[0].clone(),
            nq.shape[1].clone(),
            nv.shape[1].clone(),
        );
        let dk = d / h;
        let project = |lw: &mut Self, x: NodeId, dense: &str| {
            let y = lw.matmul_t(
                x,
                false,
                call.fields.get(&format!("{dense}.kernel")),
                false,
                span,
            );
            lw.bin(
                BinaryOp::Add,
                y,
                call.fields.get(&format!("{dense}.bias")),
                span,
            )
        };
        let heads = |lw: &mut Self, x: NodeId, len: &Dim| {
            let shape = vec![batch.clone(), len.clone(), Dim::Const(h), Dim::Const(dk)];
            let x = lw.reshape_to(x, shape, span);
            lw.transpose_by(x, vec![0, 2, 1, 3], span)
        };
        let qp = project(self, q, "query");
        let qp = self.bin_c(BinaryOp::Mul, qp, 1.0 / (dk as f64).sqrt(), span);
        let qh = heads(self, qp, &t);
        let kp = project(self, k, "key");
        let kh = heads(self, kp, &s);
        let vp = project(self, v, "value");
        let vh = heads(self, vp, &s);
        let mut scores = self.matmul_t(qh, false, kh, true, span);
        if causal {
            let index = |lw: &mut Self, d: Dim, shape: Shape| {
                let op = SelOp::Range {
                    start: Scalar::Int(0),
                    delta: Scalar::Int(1),
                };
                let r = lw.sel(op, vec![], DType::I64, vec![d], span);
                lw.reshape_to(r, shape, span)
            };
            let i = index(self, t.clone(), vec![t.clone(), Dim::Const(1)]);
            let j = index(self, s.clone(), vec![Dim::Const(1), s.clone()]);
            let below = self.bin(BinaryOp::Sub, i, j, span);
            let keep = self.cmp_c(CmpOp::Ge, below, 0.0, span);
            let hidden = self.constant(f64::NEG_INFINITY, dt, span);
            scores = self.select3(keep, scores, hidden, span);
        }
        let ns = self.graph.node(scores).clone();
        let weights = self.typed(
            Op::Softmax {
                axis: 3,
                log: false,
            },
            vec![scores],
            Ok((dt, ns.shape)),
            span,
        );
        let context = self.matmul_t(weights, false, vh, false, span);
        let context = self.transpose_by(context, vec![0, 2, 1, 3], span);
        let merged = self.reshape_to(context, vec![batch, t, Dim::Const(d)], span);
        let out = project(self, merged, "output");
        (!self.graph.node(out).poisoned).then_some(out)
    }

    /// A state tensor of a recurrent cell, `[B, H]` of the layer's dtype with the input's
    /// batch; `None` after reporting the mismatch at `arg`.
    fn cell_state(
        &mut self,
        call: &LayerCall,
        v: &Value,
        arg: &syn::Expr,
        what: &str,
        batch: &Dim,
    ) -> Option<NodeId> {
        let id = self.tensor_of(v, arg.span(), &format!("`{}`'s {what}", call.name()))?;
        let id = self.resolve_weak_to(id, call.inst.dtype, arg.span());
        let n = self.graph.node(id).clone();
        if n.poisoned {
            return None;
        }
        let want: Shape = vec![batch.clone(), Dim::Const(call.inst.dims[1])];
        if n.dtype != call.inst.dtype || n.shape != want {
            let msg = format!(
                "`{}`'s {what} must be {} (the input's batch, and `H` of the layer: {}), found {}",
                call.name(),
                type_str(call.inst.dtype, &want),
                call.layer(),
                type_str(n.dtype, &n.shape)
            );
            self.diag.error(arg.span(), msg);
            return None;
        }
        Some(id)
    }

    /// Gate `g` of `n` along the last axis of `z` ([B, n * H]): `z[.., g * H..(g + 1) * H]`.
    fn gate(&mut self, z: NodeId, g: u64, h: u64, span: super::Span) -> NodeId {
        let (start, end) = ((g * h) as i64, ((g + 1) * h) as i64);
        self.slice_axis(z, 1, start, Some(end), Dim::Const(h), span)
    }

    /// `lstm_cell(layer, x, (h, c))` -> `(h, c)`: one step of Keras' `LSTMCell` over
    /// `x [B, IN]`: `z = x · kernel + h · recurrent_kernel + bias`, split into the input,
    /// forget, cell and output gates; `c' = sigmoid(f) * c + sigmoid(i) * tanh(g)`,
    /// `h' = sigmoid(o) * tanh(c')`.
    pub(super) fn layer_lstm(&mut self, call: &LayerCall) -> Option<Value> {
        let span = call.span;
        let hs = call.inst.dims[1];
        let x = self.layer_input(call, 1, "input", 2..=2, Some((call.inst.dims[0], "IN")))?;
        let batch = self.graph.node(x).shape[0].clone();
        let arg = call.args[2];
        let state = self.lower_expr(arg);
        let (h, c) = match &state {
            Value::Tuple(vs) if vs.len() == 2 => (vs[0].clone(), vs[1].clone()),
            Value::Tensor(id) if self.graph.node(*id).poisoned => return None,
            other => {
                let msg = format!(
                    "`lstm_cell`'s state is the tuple `(h, c)` (Keras' `states=[h, c]`), found {}",
                    super::super::value_str(other, &self.graph)
                );
                self.diag.error(arg.span(), msg);
                return None;
            }
        };
        let h = self.cell_state(call, &h, arg, "state `h`", &batch);
        let c = self.cell_state(call, &c, arg, "state `c`", &batch);
        let (h, c) = (h?, c?);
        let f = |n: &str| call.fields.get(n);
        let zx = self.matmul_t(x, false, f("kernel"), false, span);
        let zh = self.matmul_t(h, false, f("recurrent_kernel"), false, span);
        let z = self.bin(BinaryOp::Add, zx, zh, span);
        let z = self.bin(BinaryOp::Add, z, f("bias"), span);
        let gates: Vec<NodeId> = (0..4).map(|g| self.gate(z, g, hs, span)).collect();
        let i = self.un(UnaryOp::Sigmoid, gates[0], span);
        let fg = self.un(UnaryOp::Sigmoid, gates[1], span);
        let g = self.un(UnaryOp::Tanh, gates[2], span);
        let o = self.un(UnaryOp::Sigmoid, gates[3], span);
        let kept = self.bin(BinaryOp::Mul, fg, c, span);
        let added = self.bin(BinaryOp::Mul, i, g, span);
        let c_new = self.bin(BinaryOp::Add, kept, added, span);
        let tc = self.un(UnaryOp::Tanh, c_new, span);
        let h_new = self.bin(BinaryOp::Mul, o, tc, span);
        Some(Value::Tuple(vec![
            Value::Tensor(h_new),
            Value::Tensor(c_new),
        ]))
    }

    /// `gru_cell(layer, x, h)` -> `h`: one step of Keras' `GRUCell` (`reset_after=True`) over
    /// `x [B, IN]`: `x · kernel + bias[0]` and `h · recurrent_kernel + bias[1]` each split into
    /// the update (z), reset (r) and candidate parts; `z = sigmoid(x_z + h_z)`,
    /// `r = sigmoid(x_r + h_r)`, `hh = tanh(x_h + r * h_h)`, `h' = z * h + (1 - z) * hh`.
    pub(super) fn layer_gru(&mut self, call: &LayerCall) -> Option<NodeId> {
        let span = call.span;
        let hs = call.inst.dims[1];
        let x = self.layer_input(call, 1, "input", 2..=2, Some((call.inst.dims[0], "IN")))?;
        let batch = self.graph.node(x).shape[0].clone();
        let arg = call.args[2];
        let state = self.lower_expr(arg);
        let h = self.cell_state(call, &state, arg, "state `h`", &batch)?;
        let f = |n: &str| call.fields.get(n);
        let bias = f("bias");
        let row = |lw: &mut Self, r: i64| {
            let b = lw.slice_axis(bias, 0, r, Some(r + 1), Dim::Const(1), span);
            lw.reshape_to(b, vec![Dim::Const(3 * hs)], span)
        };
        let (b_in, b_rec) = (row(self, 0), row(self, 1));
        let mx = self.matmul_t(x, false, f("kernel"), false, span);
        let mx = self.bin(BinaryOp::Add, mx, b_in, span);
        let mh = self.matmul_t(h, false, f("recurrent_kernel"), false, span);
        let mh = self.bin(BinaryOp::Add, mh, b_rec, span);
        let xs: Vec<NodeId> = (0..3).map(|g| self.gate(mx, g, hs, span)).collect();
        let hsl: Vec<NodeId> = (0..3).map(|g| self.gate(mh, g, hs, span)).collect();
        let z = self.bin(BinaryOp::Add, xs[0], hsl[0], span);
        let z = self.un(UnaryOp::Sigmoid, z, span);
        let r = self.bin(BinaryOp::Add, xs[1], hsl[1], span);
        let r = self.un(UnaryOp::Sigmoid, r, span);
        let rh = self.bin(BinaryOp::Mul, r, hsl[2], span);
        let hh = self.bin(BinaryOp::Add, xs[2], rh, span);
        let hh = self.un(UnaryOp::Tanh, hh, span);
        let kept = self.bin(BinaryOp::Mul, z, h, span);
        let one = self.constant(1.0, call.inst.dtype, span);
        let rest = self.bin(BinaryOp::Sub, one, z, span);
        let added = self.bin(BinaryOp::Mul, rest, hh, span);
        let out = self.bin(BinaryOp::Add, kept, added, span);
        (!self.graph.node(out).poisoned).then_some(out)
    }
}
