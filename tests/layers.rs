//! The layers library (`grafo::layers`): each layer compiled vs eager (bit for bit) vs a
//! reference written here with plain loops, on odd sizes; a model struct holding layers
//! initialised, saved and loaded; the layers' structs on their own.

use grafo::layers;
use grafo::ndarray::{Array1, Array2, Array3, ArrayD, IxDyn};
use grafo::prelude::*;

#[path = "common/layer_inputs.rs"]
mod layer_inputs;
use layer_inputs::{array, assert_bits};

/// Asserts two arrays have the same shape and values within `tol` (absolute plus relative).
fn assert_close<D: grafo::ndarray::Dimension>(
    what: &str,
    got: &grafo::ndarray::Array<f32, D>,
    want: &grafo::ndarray::Array<f32, D>,
    tol: f32,
) {
    assert_eq!(got.shape(), want.shape(), "{what}: shape");
    for (i, (g, w)) in got.iter().zip(want.iter()).enumerate() {
        assert!(
            (g - w).abs() <= tol * (1.0 + w.abs()),
            "{what}[{i}]: got {g}, reference {w}"
        );
    }
}

#[graph]
mod net {
    pub struct Mlp {
        pub fc1: Dense<5, 7>,
        pub fc2: layers::Dense<7, 3>,
    }

    pub fn dense_plain(x: Tensor<f32, B, 5>, fc: Dense<5, 7>) -> Tensor<f32, B, 7> {
        dense(fc, x)
    }

    pub fn mlp(x: Tensor<f32, B, 5>, p: Mlp) -> Tensor<f32, B, 3> {
        dense(p.fc2, dense(p.fc1, x, relu), linear)
    }

    /// Keras' `Dense` on a rank-3 input: the last axis is projected.
    pub fn dense_rank3(x: Tensor<f32, B, T, 5>, fc: Dense<5, 7>) -> Tensor<f32, B, T, 7> {
        dense(fc, x, tanh)
    }
}

/// `dense` as Keras computes it: `activation(x · kernel + bias)` over the last axis.
fn dense_ref(
    x: &ArrayD<f32>,
    k: &Array2<f32>,
    b: &Array1<f32>,
    act: fn(f32) -> f32,
) -> ArrayD<f32> {
    let (i_n, o_n) = k.dim();
    let rows = x.len() / i_n;
    let mut shape = x.shape().to_vec();
    *shape.last_mut().unwrap() = o_n;
    let xs = x.as_standard_layout();
    let xs = xs.as_slice().unwrap();
    let mut out = vec![0.0f32; rows * o_n];
    for r in 0..rows {
        for o in 0..o_n {
            let mut acc = 0.0f64;
            for i in 0..i_n {
                acc += f64::from(xs[r * i_n + i]) * f64::from(k[[i, o]]);
            }
            out[r * o_n + o] = act(acc as f32 + b[o]);
        }
    }
    ArrayD::from_shape_vec(IxDyn(&shape), out).unwrap()
}

fn relu_ref(v: f32) -> f32 {
    v.max(0.0)
}

fn id_ref(v: f32) -> f32 {
    v
}

#[test]
fn dense_matches_plain_loops() {
    let fc = layers::Dense::<5, 7>::init(11);
    // The initialisers are Keras': glorot_uniform kernel, zero bias; give the bias values.
    let fc = layers::Dense {
        bias: array(&[7], 3),
        ..fc
    };
    for batch in [0, 1, 7] {
        let x: Array2<f32> = array(&[batch, 5], 40 + batch as u64);
        let got = net::dense_plain(&x, &fc).unwrap();
        let eager = net::dense_plain::eager(&x, &fc).unwrap();
        assert_bits("dense", &got, &eager);
        let want = dense_ref(&x.clone().into_dyn(), &fc.kernel, &fc.bias, id_ref);
        assert_close("dense", &got.into_dyn(), &want, 1e-5);
    }
    let x: Array3<f32> = array(&[2, 3, 5], 9);
    let got = net::dense_rank3(&x, &fc).unwrap();
    assert_bits(
        "dense rank 3",
        &got,
        &net::dense_rank3::eager(&x, &fc).unwrap(),
    );
    let want = dense_ref(&x.into_dyn(), &fc.kernel, &fc.bias, f32::tanh);
    assert_close("dense rank 3", &got.into_dyn(), &want, 1e-5);
}

#[test]
fn a_model_of_layers_runs_compiled_eager_and_in_a_session() {
    let mut p = net::Mlp::init(5);
    p.fc1.bias = array(&[7], 1);
    p.fc2.bias = array(&[3], 2);
    let x: Array2<f32> = array(&[7, 5], 8);
    let got = net::mlp(&x, &p).unwrap();
    assert_bits("mlp", &got, &net::mlp::eager(&x, &p).unwrap());
    let mut session = Session::default();
    assert_bits(
        "mlp session",
        &got,
        &net::mlp::run(&mut session, &x, &p).unwrap(),
    );
    let h = dense_ref(&x.into_dyn(), &p.fc1.kernel, &p.fc1.bias, relu_ref);
    let want = dense_ref(&h, &p.fc2.kernel, &p.fc2.bias, id_ref);
    assert_close("mlp", &got.into_dyn(), &want, 1e-5);
}

#[test]
fn layer_structs_initialise_save_and_load_as_fields() {
    let p = net::Mlp::init(21);
    // Keras' initialisers: a glorot_uniform kernel within its limit, a zero bias.
    let limit = (6.0f32 / (5.0 + 7.0)).sqrt();
    assert!(p.fc1.kernel.iter().all(|v| v.abs() <= limit));
    assert!(p.fc1.kernel.iter().any(|v| *v != 0.0));
    assert!(p.fc1.bias.iter().all(|v| *v == 0.0));
    assert_eq!(p.fc1.kernel.dim(), (5, 7));
    assert_eq!(p.fc2.kernel.dim(), (7, 3));
    // The same seed and path give the same values; a layer alone draws by its own field names.
    assert_eq!(net::Mlp::init(21).fc2.kernel, p.fc2.kernel);
    let dir = std::env::temp_dir().join(format!("grafo-layers-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("mlp.safetensors");
    p.save_safetensors(&path).unwrap();
    let q = net::Mlp::load_safetensors(&path).unwrap();
    assert_eq!(q.fc1, p.fc1);
    assert_eq!(q.fc2, p.fc2);
    // The tensors are named by their field paths.
    let names = safetensors_names(&path);
    assert_eq!(names, ["fc1.bias", "fc1.kernel", "fc2.bias", "fc2.kernel"]);
    // A layer saves and loads on its own too, and a file of the wrong layer is an Err.
    let alone = dir.join("dense.safetensors");
    p.fc1.save_safetensors(&alone).unwrap();
    assert_eq!(
        layers::Dense::<5, 7>::load_safetensors(&alone).unwrap(),
        p.fc1
    );
    let err = layers::Dense::<7, 3>::load_safetensors(&alone).unwrap_err();
    let msg = err.to_string();
    assert!(msg.contains("kernel") && msg.contains("[7, 3]"), "{msg}");
    std::fs::remove_dir_all(&dir).unwrap();
}

fn safetensors_names(path: &std::path::Path) -> Vec<String> {
    let bytes = std::fs::read(path).unwrap();
    let st = safetensors::SafeTensors::deserialize(&bytes).unwrap();
    let mut names: Vec<String> = st.names().into_iter().map(String::from).collect();
    names.sort();
    names
}

#[graph]
mod conv {
    /// `tf.layers.conv2d(x, 4, (3, 2), strides=2, padding='same', activation=relu)`.
    pub fn conv_same(x: Tensor<f32, B, 7, 5, 3>, c: Conv2d<3, 2, 3, 4>) -> Tensor<f32, B, 4, 3, 4> {
        conv2d(c, x, 2, SAME, relu)
    }

    /// Keras' defaults: stride 1, `VALID`, no activation; the path form means the layer.
    pub fn conv_valid(
        x: Tensor<f32, B, 7, 5, 3>,
        c: Conv2d<3, 2, 3, 4>,
    ) -> Tensor<f32, B, 5, 4, 4> {
        layers::conv2d(c, x)
    }

    /// The op `conv2d` next to the layer of the same name: a tensor first is the op.
    pub fn conv_op(x: Tensor<f32, B, 7, 5, 3>, c: Conv2d<3, 2, 3, 4>) -> Tensor<f32, B, 5, 4, 4> {
        conv2d(x, c.kernel, 1, VALID) + c.bias
    }

    /// A dilated convolution, `[s, s]` strides and an explicit `linear` activation.
    pub fn conv_dilated(
        x: Tensor<f32, B, 7, 5, 3>,
        c: Conv2d<3, 2, 3, 4>,
    ) -> Tensor<f32, B, 3, 3, 4> {
        conv2d(c, x, [1, 1], VALID, linear, 2)
    }

    pub fn depthwise(
        x: Tensor<f32, B, 7, 5, 3>,
        c: DepthwiseConv2d<3, 3, 3, 2>,
    ) -> Tensor<f32, B, 7, 5, 6> {
        depthwise_conv2d(c, x, 1, SAME, relu6)
    }

    pub fn depthwise_strided(
        x: Tensor<f32, B, 7, 5, 3>,
        c: DepthwiseConv2d<3, 3, 3, 2>,
    ) -> Tensor<f32, B, 3, 2, 6> {
        depthwise_conv2d(c, x, 2)
    }
}

/// TF's padding rule: the output size and the padding before, for one axis.
fn tf_pad(n: usize, k: usize, s: usize, same: bool, dil: usize) -> (usize, usize) {
    let span = (k - 1) * dil + 1;
    if same {
        let out = n.div_ceil(s);
        let total = ((out - 1) * s + span).saturating_sub(n);
        (out, total / 2)
    } else {
        ((n - span) / s + 1, 0)
    }
}

/// A convolution of NHWC `x` by a kernel `[KH, KW, C, F]` as plain loops: `depthwise` reads
/// input channel `o / M` for output channel `o` (`F` is then the multiplier `M`).
#[allow(clippy::too_many_arguments)]
fn conv_ref(
    x: &ArrayD<f32>,
    k: &ArrayD<f32>,
    bias: &Array1<f32>,
    s: usize,
    same: bool,
    dil: usize,
    depthwise: bool,
    act: fn(f32) -> f32,
) -> ArrayD<f32> {
    let (n, h, w, c) = (x.shape()[0], x.shape()[1], x.shape()[2], x.shape()[3]);
    let (kh, kw, f) = (k.shape()[0], k.shape()[1], k.shape()[3]);
    let (oh, pt) = tf_pad(h, kh, s, same, dil);
    let (ow, pl) = (tf_pad(w, kw, s, same, dil).0, tf_pad(w, kw, s, same, dil).1);
    let oc = if depthwise { c * f } else { f };
    let mut out = ArrayD::zeros(IxDyn(&[n, oh, ow, oc]));
    for b in 0..n {
        for i in 0..oh {
            for j in 0..ow {
                for o in 0..oc {
                    let mut acc = 0.0f64;
                    for a in 0..kh {
                        for e in 0..kw {
                            let (y, xx) = (
                                (i * s + a * dil) as isize - pt as isize,
                                (j * s + e * dil) as isize - pl as isize,
                            );
                            if y < 0 || xx < 0 || y >= h as isize || xx >= w as isize {
                                continue;
                            }
                            let (y, xx) = (y as usize, xx as usize);
                            if depthwise {
                                let (ci, m) = (o / f, o % f);
                                acc += f64::from(x[[b, y, xx, ci]]) * f64::from(k[[a, e, ci, m]]);
                            } else {
                                for ci in 0..c {
                                    acc +=
                                        f64::from(x[[b, y, xx, ci]]) * f64::from(k[[a, e, ci, o]]);
                                }
                            }
                        }
                    }
                    out[[b, i, j, o]] = act(acc as f32 + bias[o]);
                }
            }
        }
    }
    out
}

fn relu6_ref(v: f32) -> f32 {
    v.clamp(0.0, 6.0)
}

/// A case: its name, the compiled, eager and reference results.
type Case = (&'static str, ArrayD<f32>, ArrayD<f32>, ArrayD<f32>);

#[test]
fn conv2d_and_depthwise_conv2d_match_plain_loops() {
    let c = layers::Conv2d::<3, 2, 3, 4> {
        bias: array(&[4], 5),
        ..layers::Conv2d::init(3)
    };
    let d = layers::DepthwiseConv2d::<3, 3, 3, 2> {
        bias: array(&[6], 6),
        ..layers::DepthwiseConv2d::init(4)
    };
    let (kc, kd) = (
        c.kernel.clone().into_dyn(),
        d.depthwise_kernel.clone().into_dyn(),
    );
    for batch in [0, 1, 3] {
        let x: grafo::ndarray::Array4<f32> = array(&[batch, 7, 5, 3], 60 + batch as u64);
        let xd = x.clone().into_dyn();
        let cases: Vec<Case> = vec![
            (
                "conv same s2 relu",
                conv::conv_same(&x, &c).unwrap().into_dyn(),
                conv::conv_same::eager(&x, &c).unwrap().into_dyn(),
                conv_ref(&xd, &kc, &c.bias, 2, true, 1, false, relu_ref),
            ),
            (
                "conv valid",
                conv::conv_valid(&x, &c).unwrap().into_dyn(),
                conv::conv_valid::eager(&x, &c).unwrap().into_dyn(),
                conv_ref(&xd, &kc, &c.bias, 1, false, 1, false, id_ref),
            ),
            (
                "conv op",
                conv::conv_op(&x, &c).unwrap().into_dyn(),
                conv::conv_op::eager(&x, &c).unwrap().into_dyn(),
                conv_ref(&xd, &kc, &c.bias, 1, false, 1, false, id_ref),
            ),
            (
                "conv dilated",
                conv::conv_dilated(&x, &c).unwrap().into_dyn(),
                conv::conv_dilated::eager(&x, &c).unwrap().into_dyn(),
                conv_ref(&xd, &kc, &c.bias, 1, false, 2, false, id_ref),
            ),
            (
                "depthwise same relu6",
                conv::depthwise(&x, &d).unwrap().into_dyn(),
                conv::depthwise::eager(&x, &d).unwrap().into_dyn(),
                conv_ref(&xd, &kd, &d.bias, 1, true, 1, true, relu6_ref),
            ),
            (
                "depthwise valid s2",
                conv::depthwise_strided(&x, &d).unwrap().into_dyn(),
                conv::depthwise_strided::eager(&x, &d).unwrap().into_dyn(),
                conv_ref(&xd, &kd, &d.bias, 2, false, 1, true, id_ref),
            ),
        ];
        for (what, got, eager, want) in cases {
            assert_bits(what, &got, &eager);
            assert_close(what, &got, &want, 1e-5);
        }
    }
}

#[graph]
mod norms {
    pub struct Norms {
        pub bn: BatchNorm<5>,
        pub ln: LayerNorm<5>,
    }

    pub fn batch_norm_default(x: Tensor<f32, B, 3, 5>, p: Norms) -> Tensor<f32, B, 3, 5> {
        batch_norm(p.bn, x)
    }

    pub fn batch_norm_eps(x: Tensor<f32, B, 3, 5>, p: Norms) -> Tensor<f32, B, 3, 5> {
        batch_norm(p.bn, x, 1e-5)
    }

    pub fn layer_norm_default(x: Tensor<f32, B, 5>, p: Norms) -> Tensor<f32, B, 5> {
        layer_norm(p.ln, x)
    }

    /// The op `layer_norm` keeps its meaning beside the layer.
    pub fn layer_norm_both(
        x: Tensor<f32, B, 5>,
        p: Norms,
    ) -> (Tensor<f32, B, 5>, Tensor<f32, B, 5>) {
        (
            layer_norm(p.ln, x, 1e-5),
            layer_norm(x, p.ln.gamma, p.ln.beta, -1, 1e-5),
        )
    }
}

/// The mean and variance for element `i` of a row.
type Stats<'a> = &'a dyn Fn(usize, &[f32]) -> (f64, f64);

/// `x` normalised over its last axis by `(mean, var)` per row (layer norm) or per channel.
fn norm_ref(
    x: &ArrayD<f32>,
    stats: Stats<'_>,
    g: &Array1<f32>,
    b: &Array1<f32>,
    eps: f64,
) -> ArrayD<f32> {
    let d = *x.shape().last().unwrap();
    let xs = x.as_standard_layout().into_owned();
    let v = xs.as_slice().unwrap();
    let mut out = Vec::with_capacity(v.len());
    for (r, row) in v.chunks(d.max(1)).enumerate() {
        for (c, &e) in row.iter().enumerate() {
            let (m, var) = stats(if d == 0 { 0 } else { r * d + c }, row);
            out.push(
                ((f64::from(e) - m) / (var + eps).sqrt() * f64::from(g[c]) + f64::from(b[c]))
                    as f32,
            );
        }
    }
    ArrayD::from_shape_vec(x.raw_dim(), out).unwrap()
}

#[test]
fn batch_norm_and_layer_norm_match_plain_loops() {
    let mut p = norms::Norms::init(1);
    p.bn.gamma = array(&[5], 71);
    p.bn.beta = array(&[5], 72);
    p.bn.moving_mean = array(&[5], 73);
    p.bn.moving_variance = array::<grafo::ndarray::Ix1>(&[5], 74).mapv(|v| v.abs() + 0.25);
    p.ln.gamma = array(&[5], 75);
    p.ln.beta = array(&[5], 76);
    let (mm, mv) = (p.bn.moving_mean.clone(), p.bn.moving_variance.clone());
    let bn_stats = |i: usize, _: &[f32]| (f64::from(mm[i % 5]), f64::from(mv[i % 5]));
    let ln_stats = |_: usize, row: &[f32]| {
        let n = row.len() as f64;
        let m = row.iter().map(|&v| f64::from(v)).sum::<f64>() / n;
        let var = row.iter().map(|&v| (f64::from(v) - m).powi(2)).sum::<f64>() / n;
        (m, var)
    };
    for batch in [0, 1, 7] {
        let x3: Array3<f32> = array(&[batch, 3, 5], 80 + batch as u64);
        let got = norms::batch_norm_default(&x3, &p).unwrap();
        assert_bits(
            "batch_norm",
            &got,
            &norms::batch_norm_default::eager(&x3, &p).unwrap(),
        );
        let want = norm_ref(
            &x3.clone().into_dyn(),
            &bn_stats,
            &p.bn.gamma,
            &p.bn.beta,
            1e-3,
        );
        assert_close("batch_norm", &got.into_dyn(), &want, 1e-5);
        let got = norms::batch_norm_eps(&x3, &p).unwrap();
        let want = norm_ref(&x3.into_dyn(), &bn_stats, &p.bn.gamma, &p.bn.beta, 1e-5);
        assert_close("batch_norm eps", &got.into_dyn(), &want, 1e-5);

        let x2: Array2<f32> = array(&[batch, 5], 90 + batch as u64);
        let got = norms::layer_norm_default(&x2, &p).unwrap();
        assert_bits(
            "layer_norm",
            &got,
            &norms::layer_norm_default::eager(&x2, &p).unwrap(),
        );
        let want = norm_ref(
            &x2.clone().into_dyn(),
            &ln_stats,
            &p.ln.gamma,
            &p.ln.beta,
            1e-3,
        );
        assert_close("layer_norm", &got.into_dyn(), &want, 1e-4);
        let (layer, op) = norms::layer_norm_both(&x2, &p).unwrap();
        assert_bits("layer_norm layer == op", &layer, &op);
        let want = norm_ref(&x2.into_dyn(), &ln_stats, &p.ln.gamma, &p.ln.beta, 1e-5);
        assert_close("layer_norm eps", &layer.into_dyn(), &want, 1e-4);
    }
}

#[graph]
mod lookup {
    pub fn embed(ids: Tensor<i32, B, T>, e: Embedding<11, 3>) -> Tensor<f32, B, T, 3> {
        embedding(e, ids)
    }
}

#[test]
fn embedding_gathers_rows_and_rejects_ids_out_of_range() {
    let e = layers::Embedding::<11, 3>::init(9);
    // Keras' default: uniform(-0.05, 0.05).
    assert!(e.embeddings.iter().all(|v| v.abs() <= 0.05));
    assert!(e.embeddings.iter().any(|v| *v != 0.0));
    let ids = grafo::ndarray::arr2(&[[0, 10, 3], [7, 7, 1]]);
    let got = lookup::embed(&ids, &e).unwrap();
    assert_bits("embedding", &got, &lookup::embed::eager(&ids, &e).unwrap());
    for ((b, t), &id) in ids.indexed_iter() {
        for d in 0..3 {
            assert_eq!(
                got[[b, t, d]].to_bits(),
                e.embeddings[[id as usize, d]].to_bits()
            );
        }
    }
    let empty = Array2::<i32>::zeros((0, 4));
    assert_eq!(lookup::embed(&empty, &e).unwrap().shape(), &[0, 4, 3]);
    let bad = grafo::ndarray::arr2(&[[0, 11]]);
    assert!(lookup::embed(&bad, &e).is_err());
    assert!(lookup::embed::eager(&bad, &e).is_err());
    let negative = grafo::ndarray::arr2(&[[-1]]);
    assert!(lookup::embed(&negative, &e).is_err());
}

/// A layer as a parameter of a plain `#[graph] fn` (no module).
#[graph]
fn standalone(x: Tensor<f32, B, 5>, fc: layers::Dense<5, 7>) -> Tensor<f32, B, 7> {
    dense(fc, x, sigmoid)
}

#[graph]
mod stacked {
    pub struct Stack {
        pub blocks: [Dense<4, 4>; 3],
        pub norms: [LayerNorm<4>; 3],
    }

    /// A function of the module taking a layer, used as an activation and as a block.
    pub fn block(h: Tensor<f32, B, 4>, d: Dense<4, 4>) -> Tensor<f32, B, 4> {
        dense(d, h, half) + h
    }

    pub fn half(h: Tensor<f32, B, 4>) -> Tensor<f32, B, 4> {
        h * 0.5
    }

    /// Layers indexed by a `for` variable: `layer_norm(p.norms[i], ..)` is the layer, found
    /// through the array.
    pub fn run(x: Tensor<f32, B, 4>, p: Stack) -> Tensor<f32, B, 4> {
        let mut h = x;
        for i in 0..3 {
            h = layer_norm(p.norms[i], block(h, p.blocks[i]));
        }
        h
    }
}

#[test]
fn layers_in_plain_functions_arrays_and_callees() {
    let fc = layers::Dense::<5, 7> {
        bias: array(&[7], 30),
        ..layers::Dense::init(31)
    };
    let x: Array2<f32> = array(&[3, 5], 32);
    let got = standalone(&x, &fc).unwrap();
    assert_bits("standalone", &got, &standalone::eager(&x, &fc).unwrap());
    let sig = |v: f32| 1.0 / (1.0 + (-v).exp());
    let want = dense_ref(&x.clone().into_dyn(), &fc.kernel, &fc.bias, sig);
    assert_close("standalone", &got.into_dyn(), &want, 1e-5);

    let mut p = stacked::Stack::init(33);
    for (k, b) in p.blocks.iter_mut().enumerate() {
        b.bias = array(&[4], 40 + k as u64);
    }
    let x: Array2<f32> = array(&[5, 4], 34);
    let got = stacked::run(&x, &p).unwrap();
    assert_bits("stack", &got, &stacked::run::eager(&x, &p).unwrap());
    let mut h = x.into_dyn();
    for i in 0..3 {
        let d = dense_ref(&h, &p.blocks[i].kernel, &p.blocks[i].bias, |v| v * 0.5);
        let r = &d + &h;
        h = r.clone();
        let (g, b) = (&p.norms[i].gamma, &p.norms[i].beta);
        for mut row in h.rows_mut() {
            let n = row.len() as f64;
            let m = row.iter().map(|&v| f64::from(v)).sum::<f64>() / n;
            let var = row.iter().map(|&v| (f64::from(v) - m).powi(2)).sum::<f64>() / n;
            for (c, v) in row.iter_mut().enumerate() {
                *v = ((f64::from(*v) - m) / (var + 1e-3).sqrt() * f64::from(g[c]) + f64::from(b[c]))
                    as f32;
            }
        }
    }
    assert_close("stack", &got.into_dyn(), &h, 1e-4);
    // The arrays of layers save as `blocks.0.kernel`, ..., `norms.2.gamma`.
    let names = {
        let dir = std::env::temp_dir().join(format!("grafo-stack-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("stack.safetensors");
        p.save_safetensors(&path).unwrap();
        let q = stacked::Stack::load_safetensors(&path).unwrap();
        assert_eq!(q.blocks, p.blocks);
        assert_eq!(q.norms, p.norms);
        let names = safetensors_names(&path);
        std::fs::remove_dir_all(&dir).unwrap();
        names
    };
    assert_eq!(names.len(), 12);
    assert!(names.contains(&"blocks.2.kernel".to_string()));
    assert!(names.contains(&"norms.0.gamma".to_string()));
}

/// The example of docs/LANGUAGE.md section 10, as written there.
#[graph]
mod cnn {
    pub struct Net {
        pub conv1: Conv2d<3, 3, 1, 16>,
        pub bn1: BatchNorm<16>,
        pub conv2: DepthwiseConv2d<3, 3, 16, 1>,
        pub fc: Dense<{ 7 * 7 * 16 }, 10>,
        pub scale: Tensor<f32, 10>,
    }

    pub fn forward(x: Tensor<f32, B, 28, 28, 1>, p: Net) -> Tensor<f32, B, 10> {
        let h = conv2d(p.conv1, x, 1, SAME, relu);
        let h = max_pool2d(batch_norm(p.bn1, h), 2, 2, VALID);
        let h = depthwise_conv2d(p.conv2, h, 2, SAME, relu6);
        dense(p.fc, reshape(h, [B, 7 * 7 * 16])) * p.scale
    }
}

#[test]
fn the_language_example_runs() {
    let mut p = cnn::Net::init(42);
    p.scale = array(&[10], 1);
    let x: grafo::ndarray::Array4<f32> = array(&[2, 28, 28, 1], 2);
    let got = cnn::forward(&x, &p).unwrap();
    assert_eq!(got.shape(), &[2, 10]);
    assert_bits("cnn", &got, &cnn::forward::eager(&x, &p).unwrap());
    assert_eq!(p.fc.kernel.dim(), (784, 10));
}
