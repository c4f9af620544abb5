//! A PyTorch state dict of `nn.LSTMCell`, `nn.GRUCell` and `nn.MultiheadAttention` loaded
//! into grafo's `LstmCell`, `GruCell` and `MultiHeadAttention` with a `Remap` that splits,
//! reorders, sums and stacks tensors (as `docs/LANGUAGE.md` section 10 says to), then run
//! against PyTorch's formulas written here as plain loops; and every way such a remap can
//! fail to fit the file, listed in one `Err`.

use grafo::checkpoint::{Combine, Problem, Remap};
use grafo::ndarray::{Array2, Array3};
use grafo::prelude::*;
use safetensors::tensor::TensorView;
use safetensors::Dtype;
use std::path::PathBuf;

#[graph]
mod ported {
    pub struct Net {
        pub lstm: LstmCell<3, 2>,
        pub gru: GruCell<3, 2>,
        pub attn: MultiHeadAttention<4, 2>,
    }

    pub fn lstm_step(
        x: Tensor<f32, B, 3>,
        h: Tensor<f32, B, 2>,
        c: Tensor<f32, B, 2>,
        p: Net,
    ) -> (Tensor<f32, B, 2>, Tensor<f32, B, 2>) {
        lstm_cell(p.lstm, x, (h, c))
    }

    pub fn gru_step(x: Tensor<f32, B, 3>, h: Tensor<f32, B, 2>, p: Net) -> Tensor<f32, B, 2> {
        gru_cell(p.gru, x, h)
    }

    pub fn attend(x: Tensor<f32, B, T, 4>, p: Net) -> Tensor<f32, B, T, 4> {
        multi_head_attention(p.attn, x, x)
    }
}

fn temp(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("grafo-torch-layers-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a temporary folder");
    dir.join(name)
}

/// Seeded values of mixed sign in [-1, 1).
fn values(n: usize, seed: u32) -> Vec<f32> {
    let mut s = seed.wrapping_mul(2_654_435_761).max(1);
    (0..n)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 17;
            s ^= s << 5;
            (s >> 8) as f32 / (1u32 << 23) as f32 - 1.0
        })
        .collect()
}

/// PyTorch's state dict of the three modules: (name, shape, values), row-major.
fn state_dict() -> Vec<(&'static str, Vec<usize>, Vec<f32>)> {
    let shapes: [(&str, Vec<usize>); 12] = [
        ("lstm.weight_ih", vec![8, 3]),
        ("lstm.weight_hh", vec![8, 2]),
        ("lstm.bias_ih", vec![8]),
        ("lstm.bias_hh", vec![8]),
        ("gru.weight_ih", vec![6, 3]),
        ("gru.weight_hh", vec![6, 2]),
        ("gru.bias_ih", vec![6]),
        ("gru.bias_hh", vec![6]),
        ("attn.in_proj_weight", vec![12, 4]),
        ("attn.in_proj_bias", vec![12]),
        ("attn.out_proj.weight", vec![4, 4]),
        ("attn.out_proj.bias", vec![4]),
    ];
    shapes
        .into_iter()
        .enumerate()
        .map(|(i, (name, shape))| {
            let n = shape.iter().product();
            (name, shape, values(n, i as u32 + 1))
        })
        .collect()
}

fn write(path: &std::path::Path, tensors: &[(&str, Vec<usize>, Vec<f32>)]) {
    let bytes: Vec<Vec<u8>> = tensors
        .iter()
        .map(|(_, _, v)| v.iter().flat_map(|x| x.to_le_bytes()).collect())
        .collect();
    let views: Vec<(String, TensorView<'_>)> = tensors
        .iter()
        .zip(&bytes)
        .map(|((name, shape, _), b)| {
            (
                name.to_string(),
                TensorView::new(Dtype::F32, shape.clone(), b).expect("a consistent tensor"),
            )
        })
        .collect();
    safetensors::serialize_to_file(views, None, path).expect("the file is written");
}

/// The remap a user writes for these three modules, following `docs/LANGUAGE.md`'s table.
fn torch_remap() -> Remap {
    // PyTorch's GRU gates are r, z, n; grafo's (Keras') z, r, n.
    let zrn = |of: &str| vec![format!("{of}.z"), format!("{of}.r"), format!("{of}.n")];
    Remap::new()
        .replace("lstm.weight_ih", "lstm.kernel")
        .replace("lstm.weight_hh", "lstm.recurrent_kernel")
        .replace("out_proj.weight", "output.kernel")
        .replace("out_proj.bias", "output.bias")
        // Each GRU tensor in its three gates, r, z, n.
        .split(0, |name| {
            let what = name.strip_prefix("gru.")?;
            Some(["r", "z", "n"].map(|g| format!("gru.{what}.{g}")).to_vec())
        })
        // `in_proj_weight` [3D, D] and `in_proj_bias` [3D] in query, key and value.
        .split(0, |name| {
            let (layer, what) = name.split_once(".in_proj_")?;
            let field = if what == "weight" { "kernel" } else { "bias" };
            Some(
                ["query", "key", "value"]
                    .map(|p| format!("{layer}.{p}.{field}"))
                    .to_vec(),
            )
        })
        .combine(Combine::Sum, |path| {
            (path == "lstm.bias").then(|| vec!["lstm.bias_ih".into(), "lstm.bias_hh".into()])
        })
        .combine(Combine::Concat(0), move |path| match path {
            "gru.kernel" => Some(zrn("gru.weight_ih")),
            "gru.recurrent_kernel" => Some(zrn("gru.weight_hh")),
            "gru.input_bias" => Some(zrn("gru.bias_ih")),
            "gru.recurrent_bias" => Some(zrn("gru.bias_hh")),
            _ => None,
        })
        .combine(Combine::Stack(0), |path| {
            (path == "gru.bias").then(|| vec!["gru.input_bias".into(), "gru.recurrent_bias".into()])
        })
        .transpose(|path| path.ends_with("kernel"))
}

fn sigmoid(x: f64) -> f64 {
    1.0 / (1.0 + (-x).exp())
}

/// `w · x + b` with PyTorch's `[out, in]` weight, in f64.
fn linear(w: &[f32], b: &[f32], x: &[f64]) -> Vec<f64> {
    let n_in = x.len();
    b.iter()
        .enumerate()
        .map(|(o, &bo)| {
            let dot: f64 = (0..n_in).map(|i| f64::from(w[o * n_in + i]) * x[i]).sum();
            dot + f64::from(bo)
        })
        .collect()
}

fn assert_close(what: &str, got: &[f32], want: &[f64]) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!(
            (f64::from(*g) - w).abs() <= 1e-5 * (1.0 + w.abs()),
            "{what}[{i}]: grafo {g}, PyTorch's formula {w}"
        );
    }
}

#[test]
fn pytorch_cells_and_attention_load_and_compute_as_in_pytorch() -> Result<(), grafo::Error> {
    let sd = state_dict();
    let path = temp("cells.safetensors");
    write(&path, &sd);
    let t = |name: &str| -> &[f32] { &sd.iter().find(|(n, _, _)| *n == name).unwrap().2 };
    let p = ported::Net::load_safetensors_with(&path, &torch_remap())?;

    // The fields hold what the table says: `kernel` is `weight_ih` transposed, the LSTM's
    // bias the sum of PyTorch's two, the GRU's gates reordered, the attention's in-projection
    // in three.
    assert_eq!(p.lstm.kernel[[2, 5]], t("lstm.weight_ih")[5 * 3 + 2]);
    assert_eq!(p.lstm.bias[3], t("lstm.bias_ih")[3] + t("lstm.bias_hh")[3]);
    assert_eq!(
        p.gru.kernel[[1, 0]],
        t("gru.weight_ih")[2 * 3 + 1],
        "z is PyTorch's 2nd gate"
    );
    assert_eq!(p.gru.kernel[[1, 2]], t("gru.weight_ih")[1]);
    assert_eq!(p.gru.bias[[1, 4]], t("gru.bias_hh")[4]);
    assert_eq!(
        p.attn.value.kernel[[3, 1]],
        t("attn.in_proj_weight")[(8 + 1) * 4 + 3]
    );
    assert_eq!(p.attn.key.bias[2], t("attn.in_proj_bias")[4 + 2]);

    // nn.LSTMCell and nn.GRUCell, step by step, for a batch of 3.
    let x = Array2::from_shape_vec((3, 3), values(9, 50)).unwrap();
    let h = Array2::from_shape_vec((3, 2), values(6, 51)).unwrap();
    let c = Array2::from_shape_vec((3, 2), values(6, 52)).unwrap();
    let (h1, c1) = ported::lstm_step(&x, &h, &c, &p)?;
    let (h1_eager, c1_eager) = ported::lstm_step::eager(&x, &h, &c, &p)?;
    assert_eq!((&h1, &c1), (&h1_eager, &c1_eager), "compiled == eager");
    let gru_h = ported::gru_step(&x, &h, &p)?;
    assert_eq!(
        gru_h,
        ported::gru_step::eager(&x, &h, &p)?,
        "compiled == eager"
    );
    for b in 0..3 {
        let xb: Vec<f64> = x.row(b).iter().map(|&v| f64::from(v)).collect();
        let hb: Vec<f64> = h.row(b).iter().map(|&v| f64::from(v)).collect();
        // LSTMCell: gates i, f, g, o.
        let gi = linear(t("lstm.weight_ih"), t("lstm.bias_ih"), &xb);
        let gh = linear(t("lstm.weight_hh"), t("lstm.bias_hh"), &hb);
        let g: Vec<f64> = gi.iter().zip(&gh).map(|(a, b)| a + b).collect();
        let (mut want_h, mut want_c) = (vec![0.0; 2], vec![0.0; 2]);
        for j in 0..2 {
            let cj = sigmoid(g[2 + j]) * f64::from(c[[b, j]]) + sigmoid(g[j]) * g[4 + j].tanh();
            want_c[j] = cj;
            want_h[j] = sigmoid(g[6 + j]) * cj.tanh();
        }
        assert_close("LSTMCell h", h1.row(b).as_slice().unwrap(), &want_h);
        assert_close("LSTMCell c", c1.row(b).as_slice().unwrap(), &want_c);
        // GRUCell: gates r, z, n; n = tanh(W_in x + b_in + r * (W_hn h + b_hn)).
        let gi = linear(t("gru.weight_ih"), t("gru.bias_ih"), &xb);
        let gh = linear(t("gru.weight_hh"), t("gru.bias_hh"), &hb);
        let want: Vec<f64> = (0..2)
            .map(|j| {
                let r = sigmoid(gi[j] + gh[j]);
                let z = sigmoid(gi[2 + j] + gh[2 + j]);
                let n = (gi[4 + j] + r * gh[4 + j]).tanh();
                (1.0 - z) * n + z * hb[j]
            })
            .collect();
        assert_close("GRUCell h", gru_h.row(b).as_slice().unwrap(), &want);
    }

    // nn.MultiheadAttention(4, 2, batch_first=True)(x, x, x): 2 heads of 2, 5 positions.
    let xs = Array3::from_shape_vec((2, 5, 4), values(40, 60)).unwrap();
    let out = ported::attend(&xs, &p)?;
    assert_eq!(out, ported::attend::eager(&xs, &p)?, "compiled == eager");
    let (w_in, b_in) = (t("attn.in_proj_weight"), t("attn.in_proj_bias"));
    for b in 0..2 {
        let rows: Vec<Vec<f64>> = (0..5)
            .map(|s| (0..4).map(|d| f64::from(xs[[b, s, d]])).collect())
            .collect();
        let proj = |part: usize, x: &[f64]| -> Vec<f64> {
            linear(
                &w_in[part * 16..part * 16 + 16],
                &b_in[part * 4..part * 4 + 4],
                x,
            )
        };
        let q: Vec<Vec<f64>> = rows.iter().map(|r| proj(0, r)).collect();
        let k: Vec<Vec<f64>> = rows.iter().map(|r| proj(1, r)).collect();
        let v: Vec<Vec<f64>> = rows.iter().map(|r| proj(2, r)).collect();
        for i in 0..5 {
            let mut merged = vec![0.0; 4];
            for head in 0..2 {
                let cols = head * 2..head * 2 + 2;
                let scores: Vec<f64> = (0..5)
                    .map(|j| cols.clone().map(|d| q[i][d] * k[j][d]).sum::<f64>() / 2f64.sqrt())
                    .collect();
                let top = scores.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
                let e: Vec<f64> = scores.iter().map(|s| (s - top).exp()).collect();
                let total: f64 = e.iter().sum();
                for d in cols {
                    merged[d] = (0..5).map(|j| e[j] / total * v[j][d]).sum();
                }
            }
            let want = linear(t("attn.out_proj.weight"), t("attn.out_proj.bias"), &merged);
            let got: Vec<f32> = (0..4).map(|d| out[[b, i, d]]).collect();
            assert_close("MultiheadAttention", &got, &want);
        }
    }
    Ok(())
}

#[test]
fn a_remap_that_does_not_fit_the_file_lists_every_problem() {
    let mut sd = state_dict();
    // `in_proj_weight` with 11 rows (not three equal parts), no `lstm.bias_hh`, and a
    // `gru.bias_hh` of 5 elements whose gates cannot be stacked with the input's.
    for (name, shape, v) in sd.iter_mut() {
        match *name {
            "attn.in_proj_weight" => {
                *shape = vec![11, 4];
                v.truncate(44);
            }
            "gru.bias_hh" => {
                *shape = vec![9];
                *v = values(9, 99);
            }
            _ => {}
        }
    }
    sd.retain(|(name, _, _)| *name != "lstm.bias_hh");
    let path = temp("bad.safetensors");
    write(&path, &sd);
    let err = ported::Net::load_safetensors_with(&path, &torch_remap()).expect_err("bad file");
    let grafo::Error::Checkpoint { problems, .. } = &err else {
        panic!("{err:?}")
    };
    let remap_problem = |field: &str, words: &str| {
        problems.iter().any(|p| {
            matches!(p, Problem::Remap { name, message } if name == field && message.contains(words))
        })
    };
    for part in ["query", "key", "value"] {
        assert!(
            remap_problem(&format!("attn.{part}.kernel"), "in 3 parts along axis 0"),
            "{err}"
        );
    }
    assert!(
        remap_problem("lstm.bias", "the file has no `lstm.bias_hh`"),
        "{err}"
    );
    assert!(
        remap_problem("gru.bias", "cannot be stacked along axis 0"),
        "{err}"
    );
    // The message names the file's tensor and the split.
    assert!(
        err.to_string().contains(
            "the remap splits `attn.in_proj_weight` (shape [11, 4]) in 3 parts along axis 0"
        ),
        "{err}"
    );
    // Nothing else is reported: the other fields loaded.
    assert_eq!(problems.len(), 5, "{err}");

    // A rule that names itself is refused, not followed forever.
    let looping = Remap::new().skip(|_| true).combine(Combine::Sum, |path| {
        (path == "w").then(|| vec!["w".to_string()])
    });
    let err = looped::Odd::load_safetensors_with(&path, &looping).expect_err("a loop");
    let grafo::Error::Checkpoint { problems, .. } = &err else {
        panic!("{err:?}")
    };
    assert!(
        matches!(&problems[..], [Problem::Remap { name, message }] if name == "w" && message.contains("nest more than 8 deep")),
        "{err}"
    );
}

#[graph]
mod looped {
    pub struct Odd {
        pub w: Tensor<f32, 2>,
    }

    pub fn shift(x: Tensor<f32, 2>, p: Odd) -> Tensor<f32, 2> {
        x + p.w
    }
}
