//! Checkpoints of parameter structs: `save_safetensors` then `load_safetensors` gives the same
//! struct; a file that does not fit lists every problem in one `Err` (written here with the
//! safetensors crate, as another framework would); `Remap` maps PyTorch's names and layouts.

use grafo::checkpoint::{Problem, Remap};
use grafo::prelude::*;
use safetensors::tensor::TensorView;
use safetensors::Dtype;
use std::path::PathBuf;

#[graph]
mod model {
    #[derive(Clone, Debug, PartialEq)]
    pub struct Attn {
        pub wq: Tensor<f32, 4, 4>,
        pub bias: Tensor<f64, 4>,
    }

    #[derive(Clone, Debug, PartialEq)]
    pub struct Block {
        pub attn: Attn,
        pub steps: Tensor<i64, 2>,
        pub mask: Tensor<bool, 3>,
    }

    #[derive(Clone, Debug, PartialEq)]
    pub struct Model {
        pub conv: Tensor<f32, 3, 3, 2, 5>,
        pub fc: Tensor<f32, 6, 3>,
        pub blocks: [Block; 2],
        pub ids: Tensor<i32, 2, 2>,
    }

    pub fn apply(x: Tensor<f32, B, 6>, m: Model) -> Tensor<f32, B, 3> {
        matmul(x, m.fc)
    }
}

fn temp(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("grafo-checkpoints-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a temporary folder");
    dir.join(name)
}

/// Writes `tensors` (name, dtype, shape, little-endian bytes) as a safetensors file.
fn write_file(path: &std::path::Path, tensors: &[(&str, Dtype, Vec<usize>, Vec<u8>)]) {
    let views: Vec<(String, TensorView<'_>)> = tensors
        .iter()
        .map(|(n, dt, shape, bytes)| {
            (
                n.to_string(),
                TensorView::new(*dt, shape.clone(), bytes).expect("a consistent tensor"),
            )
        })
        .collect();
    safetensors::serialize_to_file(views, None, path).expect("the file is written");
}

fn f32_bytes(values: impl IntoIterator<Item = f32>) -> Vec<u8> {
    values.into_iter().flat_map(f32::to_le_bytes).collect()
}

#[test]
fn save_then_load_gives_the_same_struct() -> Result<(), grafo::Error> {
    let mut m = model::Model::init(9);
    m.blocks[1].steps = Array1::from_vec(vec![-3, i64::MAX]);
    m.blocks[0].mask = Array1::from_vec(vec![true, false, true]);
    m.ids = Array2::from_shape_vec((2, 2), vec![1, -2, 3, i32::MIN]).expect("2x2");
    m.blocks[1].attn.bias = Array1::from_vec(vec![0.5, -1e300, f64::INFINITY, 0.0]);
    // A field in a non-standard layout is written in its logical order.
    m.fc = m.fc.t().to_owned().reversed_axes();
    let path = temp("round_trip.safetensors");
    m.save_safetensors(&path)?;
    let back = model::Model::load_safetensors(&path)?;
    assert_eq!(back, m);
    let x = Array2::<f32>::ones((2, 6));
    assert_eq!(model::apply(&x, &back)?, model::apply(&x, &m)?);

    // The names in the file are the field paths.
    let bytes = std::fs::read(&path).expect("the file");
    let file = safetensors::SafeTensors::deserialize(&bytes).expect("a safetensors file");
    let mut names = file.names();
    names.sort();
    assert_eq!(
        names,
        [
            "blocks.0.attn.bias",
            "blocks.0.attn.wq",
            "blocks.0.mask",
            "blocks.0.steps",
            "blocks.1.attn.bias",
            "blocks.1.attn.wq",
            "blocks.1.mask",
            "blocks.1.steps",
            "conv",
            "fc",
            "ids"
        ]
    );
    assert_eq!(file.tensor("conv").expect("conv").shape(), &[3, 3, 2, 5]);
    Ok(())
}

#[test]
fn every_problem_of_a_file_is_listed_in_one_error() {
    let m = model::Model::init(1);
    let path = temp("bad.safetensors");
    let le = |a: &Array2<f32>| f32_bytes(a.iter().copied());
    let mut tensors: Vec<(&str, Dtype, Vec<usize>, Vec<u8>)> = vec![
        // Wrong shape: [5, 3] where the field is [6, 3].
        (
            "fc",
            Dtype::F32,
            vec![5, 3],
            f32_bytes((0..15).map(|i| i as f32)),
        ),
        // Wrong dtype: f16 bytes where the field is f32.
        ("blocks.0.attn.wq", Dtype::F16, vec![4, 4], vec![0u8; 32]),
        // Unexpected: no field has this path.
        (
            "blocks.2.attn.wq",
            Dtype::F32,
            vec![4, 4],
            le(&m.blocks[0].attn.wq),
        ),
        ("extra", Dtype::I32, vec![1], vec![0u8; 4]),
        ("ids", Dtype::I32, vec![2, 2], vec![0u8; 16]),
    ];
    // Right: these fit, so they are not reported.
    let bias_bytes: Vec<u8> = m.blocks[0]
        .attn
        .bias
        .iter()
        .flat_map(|v| v.to_le_bytes())
        .collect();
    tensors.push(("blocks.0.attn.bias", Dtype::F64, vec![4], bias_bytes));
    write_file(&path, &tensors);
    // Missing: conv, blocks.0.steps, blocks.0.mask and all of blocks.1.
    let err = model::Model::load_safetensors(&path).expect_err("the file does not fit");
    let grafo::Error::Checkpoint {
        problems, model, ..
    } = &err
    else {
        panic!("a checkpoint error, found {err:?}");
    };
    assert_eq!(model, "Model");
    let missing: Vec<&str> = problems
        .iter()
        .filter_map(|p| match p {
            Problem::Missing { name, .. } => Some(name.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(
        missing,
        [
            "conv",
            "blocks.0.steps",
            "blocks.0.mask",
            "blocks.1.attn.wq",
            "blocks.1.attn.bias",
            "blocks.1.steps",
            "blocks.1.mask"
        ]
    );
    assert!(problems.contains(&Problem::Shape {
        name: "fc".into(),
        source: None,
        expected: vec![6, 3],
        found: vec![5, 3],
    }));
    assert!(problems.contains(&Problem::DType {
        name: "blocks.0.attn.wq".into(),
        source: None,
        expected: "f32",
        found: "F16".into(),
    }));
    let unexpected: Vec<&str> = problems
        .iter()
        .filter_map(|p| match p {
            Problem::Unexpected { name, .. } => Some(name.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(unexpected, ["blocks.2.attn.wq", "extra"]);
    assert_eq!(problems.len(), 7 + 2 + 2);
    // The message names every tensor, one line each.
    let text = err.to_string();
    for name in [
        "`conv`",
        "`fc`",
        "`blocks.0.attn.wq`",
        "`extra`",
        "`blocks.1.mask`",
    ] {
        assert!(text.contains(name), "{name} in {text}");
    }
    assert_eq!(text.lines().count(), 1 + problems.len(), "{text}");
}

#[test]
fn unreadable_files_are_errors_not_panics() {
    let missing = temp("does-not-exist.safetensors");
    let err = model::Model::load_safetensors(&missing).expect_err("no file");
    assert!(matches!(err, grafo::Error::Io(_)), "{err:?}");
    let garbage = temp("garbage.safetensors");
    std::fs::write(&garbage, b"\xff\xff\xff\xff\xff\xff\xff\x7fnot json").expect("written");
    let err = model::Model::load_safetensors(&garbage).expect_err("not safetensors");
    assert!(
        matches!(&err, grafo::Error::Checkpoint { problems, .. } if matches!(problems[..], [Problem::Format(_)])),
        "{err:?}"
    );
    let empty = temp("empty.safetensors");
    std::fs::write(&empty, b"").expect("written");
    assert!(model::Model::load_safetensors(&empty).is_err());
}

#[graph]
mod torch_port {
    pub struct Net {
        pub conv1: Tensor<f32, 3, 3, 2, 4>,
        pub fc: Tensor<f32, 5, 3>,
        pub fc_b: Tensor<f32, 3>,
    }

    pub fn apply(x: Tensor<f32, B, 5>, p: Net) -> Tensor<f32, B, 3> {
        matmul(x, p.fc) + p.fc_b
    }
}

#[test]
fn remap_reads_pytorch_names_and_layouts() -> Result<(), grafo::Error> {
    // A PyTorch state dict: `conv1.weight` OIHW [4, 2, 3, 3], `fc.weight` [out 3, in 5],
    // `fc.bias`, and a batch-norm step counter no field holds.
    let oihw = Array4::from_shape_fn((4, 2, 3, 3), |(o, i, h, w)| {
        (o * 1000 + i * 100 + h * 10 + w) as f32
    });
    let linear = Array2::from_shape_fn((3, 5), |(o, i)| (o * 10 + i) as f32);
    let path = temp("torch.safetensors");
    write_file(
        &path,
        &[
            (
                "conv1.weight",
                Dtype::F32,
                vec![4, 2, 3, 3],
                f32_bytes(oihw.iter().copied()),
            ),
            (
                "fc.weight",
                Dtype::F32,
                vec![3, 5],
                f32_bytes(linear.iter().copied()),
            ),
            ("fc.bias", Dtype::F32, vec![3], f32_bytes([1.0, 2.0, 3.0])),
            ("bn1.num_batches_tracked", Dtype::I64, vec![], vec![0u8; 8]),
        ],
    );
    // Without a remap: every name is wrong.
    let err = torch_port::Net::load_safetensors(&path).expect_err("PyTorch's names");
    assert!(err.to_string().contains("missing tensor `conv1`"), "{err}");

    let remap = Remap::new()
        .skip(|name| name.ends_with("num_batches_tracked"))
        .rename(|name| {
            Some(match name {
                "conv1.weight" => "conv1".to_string(),
                "fc.weight" => "fc".to_string(),
                "fc.bias" => "fc_b".to_string(),
                other => other.to_string(),
            })
        })
        .oihw_to_hwio(|path| path == "conv1")
        .transpose(|path| path == "fc");
    let p = torch_port::Net::load_safetensors_with(&path, &remap)?;
    assert_eq!(p.conv1.shape(), &[3, 3, 2, 4]);
    assert_eq!(
        p.conv1[[2, 1, 0, 3]],
        oihw[[3, 0, 2, 1]],
        "HWIO[h, w, i, o] = OIHW[o, i, h, w]"
    );
    assert_eq!(p.fc, linear.t());
    // PyTorch's Linear: x @ W.T + b.
    let x = Array2::from_shape_fn((2, 5), |(r, c)| (r + c) as f32);
    let expected = x.dot(&linear.t()) + &Array1::from_vec(vec![1.0, 2.0, 3.0]);
    assert_eq!(torch_port::apply(&x, &p)?, expected);

    // A rule that does not fit the rank, and two names renamed onto one field, are listed too.
    let bad = Remap::new()
        .skip(|name| name.ends_with("num_batches_tracked"))
        .rename(|name| {
            Some(if name.starts_with("fc.") {
                "fc_b".into()
            } else {
                "conv1".into()
            })
        })
        .transpose(|path| path == "conv1");
    let err = torch_port::Net::load_safetensors_with(&path, &bad).expect_err("bad remap");
    let grafo::Error::Checkpoint { problems, .. } = &err else {
        panic!("{err:?}")
    };
    assert!(
        problems
            .iter()
            .any(|p| matches!(p, Problem::Duplicate { name, .. } if name == "fc_b")),
        "{err}"
    );
    assert!(
        problems
            .iter()
            .any(|p| matches!(p, Problem::Layout { name, .. } if name == "conv1")),
        "{err}"
    );
    assert!(
        problems
            .iter()
            .any(|p| matches!(p, Problem::Missing { name, .. } if name == "fc")),
        "{err}"
    );
    Ok(())
}
