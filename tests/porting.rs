//! The porting recipes of docs/LANGUAGE-NOTES.md ("Porting from PyTorch"), checked: NCHW/OIHW through one permutation each, PyTorch's `padding=1` at stride 2 as an explicit `pad` then `VALID` (and how TF's `SAME` differs from it), and per-step outputs collected with a `concat` accumulator that starts from `zeros([B, 0, H])`.
//!
//! Each graph runs compiled, eager and in a `Session`, against plain loops written as
//! PyTorch defines the layer. The values are multiples of 1/8, so every sum is exact and
//! the comparisons are bit for bit.

use grafo::ndarray::{Array2, Array3, Array4};
use grafo::prelude::*;

/// PyTorch's `Conv2d(2, 3, 3, stride=2, padding=1, bias=False)` on an NCHW input with an
/// OIHW weight: permute both to grafo's NHWC/HWIO, pad one pixel on every side, VALID.
#[graph]
fn torch_conv(x: Tensor<f32, N, 2, 8, 8>, w: Tensor<f32, 3, 2, 3, 3>) -> Tensor<f32, N, 3, 4, 4> {
    let xh = transpose(x, [0, 2, 3, 1]);
    let k = transpose(w, [2, 3, 1, 0]);
    let y = conv2d(pad(xh, [[0, 0], [1, 1], [1, 1], [0, 0]]), k, 2, VALID);
    transpose(y, [0, 3, 1, 2])
}

/// The same layer with TF's `SAME` at stride 2: on an even input it pads 0 rows before and 1
/// after (PyTorch: 1 and 1), so every window sits one pixel further.
#[graph]
fn same_conv(x: Tensor<f32, N, 2, 8, 8>, w: Tensor<f32, 3, 2, 3, 3>) -> Tensor<f32, N, 3, 4, 4> {
    let y = conv2d(
        transpose(x, [0, 2, 3, 1]),
        transpose(w, [2, 3, 1, 0]),
        2,
        SAME,
    );
    transpose(y, [0, 3, 1, 2])
}

/// An Elman RNN over the 5 steps of `x`, its state after every step collected along axis 1
/// (PyTorch's `torch.stack(outputs, 1)` of a list appended to in the loop).
#[graph]
fn rnn_states(
    x: Tensor<f32, B, 5, 3>,
    w: Tensor<f32, 3, 4>,
    u: Tensor<f32, 4, 4>,
) -> Tensor<f32, B, 5, 4> {
    let mut h = zeros([B, 4]);
    let mut outs = zeros([B, 0, 4]);
    for t in 0..5 {
        h = relu(matmul(x[s![.., t, ..]], w) + matmul(h, u) * 0.5);
        outs = concat([outs, expand_dims(h, 1)], 1);
    }
    outs
}

fn eighths(i: usize, seed: usize) -> f32 {
    ((i * 7 + seed * 5) % 13) as f32 / 8.0 - 0.75
}

/// PyTorch's convolution on NCHW/OIHW by its definition, with `pad_before` rows and columns
/// of zeros before (and as many after as the stride needs).
fn naive_torch_conv(
    x: &Array4<f32>,
    w: &Array4<f32>,
    stride: usize,
    pad_before: usize,
) -> Array4<f32> {
    let (n, c, h, wd) = x.dim();
    let (o, _, kh, kw) = w.dim();
    let (oh, ow) = (h.div_ceil(stride), wd.div_ceil(stride));
    Array4::from_shape_fn((n, o, oh, ow), |(b, q, i, j)| {
        let mut acc = 0.0f32;
        for ci in 0..c {
            for di in 0..kh {
                for dj in 0..kw {
                    let r = (i * stride + di).wrapping_sub(pad_before);
                    let s = (j * stride + dj).wrapping_sub(pad_before);
                    if r < h && s < wd {
                        acc += x[[b, ci, r, s]] * w[[q, ci, di, dj]];
                    }
                }
            }
        }
        acc
    })
}

#[test]
fn nchw_conv_with_torch_padding() {
    let mut sess = Session::default();
    for n in [1, 2] {
        let x = Array4::from_shape_fn((n, 2, 8, 8), |(b, c, i, j)| {
            eighths(((b * 2 + c) * 8 + i) * 8 + j, 1)
        });
        let w = Array4::from_shape_fn((3, 2, 3, 3), |(o, c, i, j)| {
            eighths(((o * 2 + c) * 3 + i) * 3 + j, 2)
        });
        let want = naive_torch_conv(&x, &w, 2, 1);
        assert_eq!(torch_conv(&x, &w).unwrap(), want);
        assert_eq!(torch_conv::eager(&x, &w).unwrap(), want);
        assert_eq!(torch_conv::run(&mut sess, &x, &w).unwrap(), want);
        // SAME at stride 2 on an even size pads 0 before: PyTorch's layer with padding 0
        // before, which differs from padding=1.
        let same = same_conv(&x, &w).unwrap();
        assert_eq!(same, naive_torch_conv(&x, &w, 2, 0));
        assert_eq!(same_conv::eager(&x, &w).unwrap(), same);
        assert_ne!(same, want);
    }
}

#[test]
fn per_step_outputs_through_a_concat_accumulator() {
    let mut sess = Session::default();
    for b in [0, 1, 7] {
        let x = Array3::from_shape_fn((b, 5, 3), |(i, t, c)| eighths((i * 5 + t) * 3 + c, 3));
        let w = Array2::from_shape_fn((3, 4), |(i, j)| eighths(i * 4 + j, 4));
        let u = Array2::from_shape_fn((4, 4), |(i, j)| eighths(i * 4 + j, 5));
        // The loop as PyTorch writes it: a list of states, stacked at the end.
        let mut want = Array3::<f32>::zeros((b, 5, 4));
        for i in 0..b {
            let mut h = [0.0f32; 4];
            for t in 0..5 {
                let mut next = [0.0f32; 4];
                for (j, v) in next.iter_mut().enumerate() {
                    let xw: f32 = (0..3).map(|c| x[[i, t, c]] * w[[c, j]]).sum();
                    let hu: f32 = (0..4).map(|q| h[q] * u[[q, j]]).sum();
                    *v = (xw + hu * 0.5).max(0.0);
                }
                h = next;
                for j in 0..4 {
                    want[[i, t, j]] = h[j];
                }
            }
        }
        assert_eq!(rnn_states(&x, &w, &u).unwrap(), want);
        assert_eq!(rnn_states::eager(&x, &w, &u).unwrap(), want);
        assert_eq!(rnn_states::run(&mut sess, &x, &w, &u).unwrap(), want);
    }
}
