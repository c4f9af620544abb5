//! Parameter structs in `#[graph] mod`: a struct parameter read by field (`p.hidden.w`),
//! nested structs and `[Block; N]` arrays indexed by a `for` variable, struct arguments of
//! inlined calls, struct results, and gradients with respect to a struct; compiled vs eager
//! vs a reference written here with ndarray.

use grafo::prelude::*;

#[graph]
mod mlp {
    const HIDDEN: usize = 16;

    #[derive(Clone, Debug)]
    pub struct Dense {
        pub w: Tensor<f32, 8, HIDDEN>,
        pub b: Tensor<f32, HIDDEN>,
    }

    #[derive(Clone, Debug)]
    pub struct Head {
        pub w: Tensor<f32, HIDDEN, 4>,
        pub b: Tensor<f32, 4>,
    }

    #[derive(Clone, Debug)]
    pub struct Net {
        pub hidden: Dense,
        pub out: Head,
    }

    /// The forward pass over a struct parameter.
    pub fn forward(x: Tensor<f32, B, 8>, p: Net) -> Tensor<f32, B, 4> {
        let h = relu(matmul(x, p.hidden.w) + p.hidden.b);
        matmul(h, p.out.w) + p.out.b
    }

    /// A struct passed along to an inlined call, and a nested struct passed on its own.
    pub fn dense(x: Tensor<f32, B, 8>, d: Dense) -> Tensor<f32, B, HIDDEN> {
        relu(matmul(x, d.w) + d.b)
    }

    pub fn forward_by_calls(x: Tensor<f32, B, 8>, p: Net) -> Tensor<f32, B, 4> {
        let h = dense(x, p.hidden);
        head(h, p)
    }

    pub fn head(h: Tensor<f32, B, HIDDEN>, p: Net) -> Tensor<f32, B, 4> {
        matmul(h, p.out.w) + p.out.b
    }

    /// The loss and the gradient with respect to every field, as a `Net`.
    pub fn loss_and_grads(x: Tensor<f32, B, 8>, y: Tensor<i32, B>, p: Net) -> (Tensor<f32>, Net) {
        let logits = forward(x, p);
        let loss = reduce_mean(sparse_softmax_cross_entropy_with_logits(y, logits));
        (loss, gradients(loss, p))
    }

    /// Gradients with respect to single fields and a nested struct, in one tuple.
    pub fn field_grads(
        x: Tensor<f32, B, 8>,
        y: Tensor<i32, B>,
        p: Net,
    ) -> (Tensor<f32, 8, HIDDEN>, Head) {
        let loss = reduce_mean(sparse_softmax_cross_entropy_with_logits(y, forward(x, p)));
        gradients(loss, (p.hidden.w, p.out))
    }

    /// One SGD step returning the updated struct, built with a struct literal.
    pub fn sgd(x: Tensor<f32, B, 8>, y: Tensor<i32, B>, p: Net, lr: f32) -> (Tensor<f32>, Net) {
        let loss = reduce_mean(sparse_softmax_cross_entropy_with_logits(y, forward(x, p)));
        let g = gradients(loss, p);
        let out = Head {
            w: apply_gradient_descent(p.out.w, lr, g.out.w),
            b: p.out.b - lr * g.out.b,
        };
        let hidden = Dense {
            w: p.hidden.w - lr * g.hidden.w,
            ..p.hidden
        };
        (
            loss,
            Net {
                hidden: Dense {
                    b: p.hidden.b - lr * g.hidden.b,
                    ..hidden
                },
                out,
            },
        )
    }
}

#[graph]
mod stack {
    pub struct Block {
        pub w: Tensor<f32, 6, 6>,
        #[init(ones)]
        pub g: Tensor<f32, 6>,
    }

    pub struct Stack {
        pub blocks: [Block; 3],
        pub scales: [Tensor<f32, 6>; 2],
    }

    pub fn block(x: Tensor<f32, B, 6>, b: Block) -> Tensor<f32, B, 6> {
        tanh(matmul(x, b.w)) * b.g + x
    }

    pub fn run_stack(x: Tensor<f32, B, 6>, s: Stack) -> Tensor<f32, B, 6> {
        let mut h = x;
        for i in 0..3 {
            h = block(h, s.blocks[i]);
        }
        h * s.scales[0] + s.scales[1]
    }

    /// An array parameter of its own, and literal indices.
    pub fn first_and_last(x: Tensor<f32, B, 6>, blocks: [Block; 3]) -> Tensor<f32, B, 6> {
        block(block(x, blocks[0]), blocks[2])
    }
}

/// The example of docs/LANGUAGE.md section 9, as written there.
#[graph]
mod doc_mlp {
    const HIDDEN: usize = 512;

    pub struct Dense {
        #[init(he_normal)]
        pub w: Tensor<f32, 784, HIDDEN>,
        pub b: Tensor<f32, HIDDEN>,
    }
    pub struct Block {
        pub wq: Tensor<f32, HIDDEN, HIDDEN>,
        #[init(ones)]
        pub g: Tensor<f32, HIDDEN>,
    }
    pub struct Net {
        pub hidden: Dense,
        pub blocks: [Block; 4],
        pub out: Tensor<f32, HIDDEN, 10>,
    }

    pub fn block(h: Tensor<f32, B, HIDDEN>, b: Block) -> Tensor<f32, B, HIDDEN> {
        tanh(matmul(h, b.wq)) * b.g + h
    }

    pub fn forward(x: Tensor<f32, B, 784>, p: Net) -> Tensor<f32, B, 10> {
        let mut h = relu(matmul(x, p.hidden.w) + p.hidden.b);
        for i in 0..4 {
            h = block(h, p.blocks[i]);
        }
        matmul(h, p.out)
    }

    pub fn sgd(x: Tensor<f32, B, 784>, y: Tensor<i32, B>, p: Net, lr: f32) -> (Tensor<f32>, Net) {
        let loss = reduce_mean(sparse_softmax_cross_entropy_with_logits(y, forward(x, p)));
        let g = gradients(loss, p);
        let hidden = Dense {
            w: p.hidden.w - lr * g.hidden.w,
            b: p.hidden.b - lr * g.hidden.b,
        };
        (
            loss,
            Net {
                hidden,
                out: p.out - lr * g.out,
                ..p
            },
        )
    }
}

#[test]
fn the_documented_example_trains() -> Result<(), grafo::Error> {
    let p = doc_mlp::Net::init(42);
    let x = input(8, 784, 5) * 0.1;
    let labels = Array1::from_vec(vec![0, 1, 2, 3, 4, 5, 6, 7]);
    let y = doc_mlp::forward(&x, &p)?;
    assert_eq!(y, doc_mlp::forward::eager(&x, &p)?);
    let (loss0, q) = doc_mlp::sgd(&x, &labels, &p, 0.1)?;
    assert_eq!(
        q.blocks[2].wq, p.blocks[2].wq,
        "fields the step leaves are taken from p"
    );
    let (loss1, _) = doc_mlp::sgd(&x, &labels, &q, 0.1)?;
    assert!(loss1[[]] < loss0[[]]);
    let path =
        std::env::temp_dir().join(format!("grafo-doc-mlp-{}.safetensors", std::process::id()));
    q.save_safetensors(&path)?;
    let back = doc_mlp::Net::load_safetensors(&path)?;
    assert_eq!(back.blocks[3].g, q.blocks[3].g);
    assert_eq!(doc_mlp::forward(&x, &back)?, doc_mlp::forward(&x, &q)?);
    Ok(())
}

fn close(a: &ArrayD<f32>, b: &ArrayD<f32>, tol: f32) -> bool {
    a.shape() == b.shape()
        && a.iter()
            .zip(b.iter())
            .all(|(x, y)| (x - y).abs() <= tol * (1.0 + y.abs()))
}

fn input(b: usize, n: usize, seed: u32) -> Array2<f32> {
    Array2::from_shape_fn((b, n), |(i, j)| {
        (((i * 31 + j * 17 + seed as usize * 7) % 23) as f32 - 11.0) / 13.0
    })
}

fn reference_forward(x: &Array2<f32>, p: &mlp::Net) -> Array2<f32> {
    let h = (x.dot(&p.hidden.w) + &p.hidden.b).mapv(|v| v.max(0.0));
    h.dot(&p.out.w) + &p.out.b
}

#[test]
fn struct_parameter_compiled_eager_and_reference_agree() -> Result<(), grafo::Error> {
    let p = mlp::Net::init(7);
    let x = input(5, 8, 1);
    let compiled = mlp::forward(&x, &p)?;
    let eager = mlp::forward::eager(&x, &p)?;
    let mut session = Session::default();
    let run = mlp::forward::run(&mut session, &x, &p)?;
    let by_calls = mlp::forward_by_calls(&x, &p)?;
    let reference = reference_forward(&x, &p);
    assert_eq!(compiled, eager, "compiled == eager bit for bit");
    assert_eq!(compiled, run);
    assert!(close(
        &compiled.clone().into_dyn(),
        &reference.into_dyn(),
        1e-5
    ));
    assert_eq!(compiled, by_calls);
    Ok(())
}

#[test]
fn a_struct_literal_builds_the_parameter() -> Result<(), grafo::Error> {
    let p = mlp::Net {
        hidden: mlp::Dense {
            w: Array2::from_elem((8, 16), 0.5),
            b: Array1::zeros(16),
        },
        out: mlp::Head {
            w: Array2::from_elem((16, 4), 0.25),
            b: Array1::from_elem(4, 1.0),
        },
    };
    let x = Array2::<f32>::ones((2, 8));
    let y = mlp::forward(&x, &p)?;
    // relu(8 * 0.5) = 4 per hidden unit; 16 * 4 * 0.25 + 1 = 17.
    assert!(y.iter().all(|&v| v == 17.0));
    Ok(())
}

#[test]
fn gradients_with_respect_to_a_struct_are_a_struct() -> Result<(), grafo::Error> {
    let p = mlp::Net::init(3);
    let x = input(6, 8, 2);
    let y = Array1::from_vec(vec![0, 1, 2, 3, 1, 0]);
    let (loss, g) = mlp::loss_and_grads(&x, &y, &p)?;
    let (loss_e, g_e) = mlp::loss_and_grads::eager(&x, &y, &p)?;
    assert_eq!(loss, loss_e);
    assert_eq!(g.hidden.w, g_e.hidden.w);
    assert_eq!(g.out.b, g_e.out.b);
    assert_eq!(g.hidden.w.shape(), &[8, 16]);
    // The single-field gradients are the same values.
    let (gw, ghead) = mlp::field_grads(&x, &y, &p)?;
    assert_eq!(gw, g.hidden.w);
    assert_eq!(ghead.w, g.out.w);
    assert_eq!(ghead.b, g.out.b);
    // Against central differences on a few entries of every field.
    let loss_of = |q: &mlp::Net| -> f64 {
        let logits = reference_forward(&x, q);
        let mut total = 0.0f64;
        for (r, &label) in y.iter().enumerate() {
            let row = logits.row(r);
            let m = row.fold(f32::NEG_INFINITY, |a, &b| a.max(b)) as f64;
            let lse = row.iter().map(|&v| (v as f64 - m).exp()).sum::<f64>().ln() + m;
            total += lse - row[label as usize] as f64;
        }
        total / y.len() as f64
    };
    assert!((loss_of(&p) - f64::from(loss[[]])).abs() < 1e-5);
    let eps = 1e-2f32;
    for (field, idx) in [
        ("hidden.w", [1usize, 3]),
        ("out.w", [5, 2]),
        ("hidden.w", [7, 15]),
    ] {
        let (mut up, mut down) = (p.clone(), p.clone());
        let (a, b) = match field {
            "hidden.w" => (&mut up.hidden.w, &mut down.hidden.w),
            _ => (&mut up.out.w, &mut down.out.w),
        };
        a[idx] += eps;
        b[idx] -= eps;
        let numeric = (loss_of(&up) - loss_of(&down)) / (2.0 * f64::from(eps));
        let analytic = match field {
            "hidden.w" => g.hidden.w[idx],
            _ => g.out.w[idx],
        };
        assert!(
            (numeric - f64::from(analytic)).abs() < 2e-3,
            "{field}{idx:?}: {numeric} vs {analytic}"
        );
    }
    for j in 0..4 {
        let (mut up, mut down) = (p.clone(), p.clone());
        up.out.b[j] += eps;
        down.out.b[j] -= eps;
        let numeric = (loss_of(&up) - loss_of(&down)) / (2.0 * f64::from(eps));
        assert!((numeric - f64::from(g.out.b[j])).abs() < 2e-3);
    }
    Ok(())
}

#[test]
fn an_sgd_step_returns_the_updated_struct() -> Result<(), grafo::Error> {
    let p = mlp::Net::init(11);
    let x = input(6, 8, 4);
    let y = Array1::from_vec(vec![3, 1, 2, 0, 1, 2]);
    let (_, g) = mlp::loss_and_grads(&x, &y, &p)?;
    let (loss0, q) = mlp::sgd(&x, &y, &p, 0.5)?;
    let (_, q_e) = mlp::sgd::eager(&x, &y, &p, 0.5)?;
    assert_eq!(q.hidden.w, q_e.hidden.w);
    assert_eq!(q.out.b, q_e.out.b);
    let expected = &p.hidden.w - &(0.5f32 * &g.hidden.w);
    assert!(close(
        &q.hidden.w.clone().into_dyn(),
        &expected.into_dyn(),
        1e-6
    ));
    let expected_b = &p.hidden.b - &(0.5f32 * &g.hidden.b);
    assert!(close(
        &q.hidden.b.clone().into_dyn(),
        &expected_b.into_dyn(),
        1e-6
    ));
    let (loss1, _) = mlp::sgd(&x, &y, &q, 0.5)?;
    assert!(
        loss1[[]] < loss0[[]],
        "a step lowers the loss: {} -> {}",
        loss0[[]],
        loss1[[]]
    );
    Ok(())
}

fn reference_block(x: &Array2<f32>, b: &stack::Block) -> Array2<f32> {
    x.dot(&b.w).mapv(f32::tanh) * &b.g + x
}

#[test]
fn nested_arrays_of_blocks_in_a_for_loop() -> Result<(), grafo::Error> {
    let s = stack::Stack::init(5);
    assert!(
        s.blocks.iter().all(|b| b.g.iter().all(|&v| v == 1.0)),
        "#[init(ones)]"
    );
    assert_ne!(
        s.blocks[0].w, s.blocks[1].w,
        "each element is seeded by its own path"
    );
    let s = stack::Stack {
        scales: [Array1::from_elem(6, 2.0), Array1::from_elem(6, -0.5)],
        ..s
    };
    let x = input(4, 6, 3);
    let compiled = stack::run_stack(&x, &s)?;
    let eager = stack::run_stack::eager(&x, &s)?;
    let mut h = x.clone();
    for b in &s.blocks {
        h = reference_block(&h, b);
    }
    let reference = h * 2.0 - 0.5;
    assert_eq!(compiled, eager);
    assert!(close(&compiled.into_dyn(), &reference.into_dyn(), 1e-5));

    let ends = stack::first_and_last(&x, &s.blocks)?;
    let reference = reference_block(&reference_block(&x, &s.blocks[0]), &s.blocks[2]);
    assert!(close(&ends.into_dyn(), &reference.into_dyn(), 1e-5));
    Ok(())
}

#[test]
fn a_wrong_field_shape_at_run_time_is_an_error_naming_the_field() {
    let mut p = mlp::Net::init(1);
    p.out.b = Array1::zeros(5);
    let x = input(2, 8, 0);
    let err = mlp::forward(&x, &p).unwrap_err();
    let text = err.to_string();
    assert!(text.contains("p.out.b"), "{text}");
    let err = mlp::forward::eager(&x, &p).unwrap_err();
    assert!(err.to_string().contains("p.out.b"));
}

#[test]
fn the_graph_names_inputs_by_field_path() {
    let g = mlp::forward::graph();
    let names: Vec<&str> = g.inputs.iter().map(|i| i.name.as_str()).collect();
    assert_eq!(
        names,
        ["x", "p.hidden.w", "p.hidden.b", "p.out.w", "p.out.b"]
    );
}
