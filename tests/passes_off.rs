//! Every workload gives the same result with each optimisation pass switched off, compared with eager and a naive reference.

use grafo::prelude::*;

macro_rules! variants {
    ($($name:ident: $($disable:ident),* ;)*) => {
        $(
            mod $name {
                use grafo::prelude::*;

                #[graph(disable($($disable),*))]
                pub fn gelu(x: Tensor<f32, N>) -> Tensor<f32, N> {
                    0.5 * x * (1.0 + tanh(0.7978845608 * (x + 0.044715 * x * x * x)))
                }

                #[graph(disable($($disable),*))]
                pub fn mlp(x: Tensor<f32, B, 12>, w1: Tensor<f32, 12, 8>, b1: Tensor<f32, 8>, w2: Tensor<f32, 8, 5>, b2: Tensor<f32, 5>) -> Tensor<f32, B, 5> {
                    softmax(matmul(relu(matmul(x, w1) + b1), w2) + b2, -1)
                }

                #[graph(disable($($disable),*))]
                pub fn convnet(x: Tensor<f32, 1, 6, 7, 3>, k0: Tensor<f32, 3, 3, 3, 4>, b0: Tensor<f32, 4>, k1: Tensor<f32, 3, 3, 4, 4>, b1: Tensor<f32, 4>, limit: Tensor<f32>) -> Tensor<f32, 1, 6, 7, 4> {
                    let mut y = relu(conv2d(x, k0, 1, SAME) + b0);
                    if norm(y) < limit {
                        y = relu(conv2d(y, k1, 1, SAME) + b1);
                    }
                    y
                }

                #[graph(disable($($disable),*))]
                pub fn layernorm(x: Tensor<f32, N, 16>, gamma: Tensor<f32, 16>, beta: Tensor<f32, 16>) -> Tensor<f32, N, 16> {
                    let mean = reduce_mean(x, -1, true);
                    let d = x - mean;
                    let var = reduce_mean(d * d, -1, true);
                    d / sqrt(var + 1e-5) * gamma + beta
                }

                #[graph(disable($($disable),*))]
                pub fn folded(x: Tensor<f32, N>) -> (Tensor<f32, N>, Tensor<i32>) {
                    let unused = exp(x) * 2.0;
                    let c = constant(5) + constant(3);
                    let mut y = x * 1.0 + 0.0;
                    if constant(1.0) > constant(2.0) {
                        y = log(x);
                    }
                    (transpose(transpose(y)) / 4.0, c)
                }
            }
        )*
        const VARIANTS: &[(&str, Runner)] = &[$((stringify!($name), Runner {
            gelu: |x| $name::gelu(x).unwrap(),
            mlp: |a| $name::mlp(&a.0, &a.1, &a.2, &a.3, &a.4).unwrap(),
            convnet: |a, l| $name::convnet(&a.0, &a.1, &a.2, &a.3, &a.4, l).unwrap(),
            layernorm: |a| $name::layernorm(&a.0, &a.1, &a.2).unwrap(),
            folded: |x| $name::folded(x).unwrap(),
        })),*];
    };
}

type MlpArgs = (
    Array2<f32>,
    Array2<f32>,
    Array1<f32>,
    Array2<f32>,
    Array1<f32>,
);
type ConvArgs = (
    Array4<f32>,
    Array4<f32>,
    Array1<f32>,
    Array4<f32>,
    Array1<f32>,
);
type FoldedOut = (Array1<f32>, Array0<i32>);
type LnArgs = (Array2<f32>, Array1<f32>, Array1<f32>);

struct Runner {
    gelu: fn(&Array1<f32>) -> Array1<f32>,
    mlp: fn(&MlpArgs) -> Array2<f32>,
    convnet: fn(&ConvArgs, &Array0<f32>) -> Array4<f32>,
    layernorm: fn(&LnArgs) -> Array2<f32>,
    folded: fn(&Array1<f32>) -> FoldedOut,
}

variants! {
    all_passes: ;
    no_fold: fold;
    no_simplify: simplify;
    no_cse: cse;
    no_dce: dce;
    no_fusion: fusion;
    none: fold, simplify, cse, dce, fusion;
}

fn values(n: usize, seed: usize) -> Vec<f32> {
    (0..n)
        .map(|i| (((i * 37 + seed * 11) % 97) as f32 / 48.0) - 1.0)
        .collect()
}

fn close(a: &[f32], b: &[f32], what: &str) {
    assert_eq!(a.len(), b.len(), "{what}");
    for (i, (x, y)) in a.iter().zip(b).enumerate() {
        assert!(
            (x - y).abs() <= 1e-4 * (1.0 + y.abs()) || (x.is_nan() && y.is_nan()),
            "{what}[{i}]: {x} vs {y}"
        );
    }
}

#[test]
fn every_pass_combination_agrees_with_the_naive_reference() {
    let x = Array1::from_vec(values(1023, 1));
    let mlp_args: MlpArgs = (
        Array2::from_shape_vec((7, 12), values(84, 2)).unwrap(),
        Array2::from_shape_vec((12, 8), values(96, 3)).unwrap(),
        Array1::from_vec(values(8, 4)),
        Array2::from_shape_vec((8, 5), values(40, 5)).unwrap(),
        Array1::from_vec(values(5, 6)),
    );
    let conv_args: ConvArgs = (
        Array4::from_shape_vec((1, 6, 7, 3), values(126, 7)).unwrap(),
        Array4::from_shape_vec((3, 3, 3, 4), values(108, 8)).unwrap(),
        Array1::from_vec(values(4, 9)),
        Array4::from_shape_vec((3, 3, 4, 4), values(144, 10)).unwrap(),
        Array1::from_vec(values(4, 11)),
    );
    let ln_args: LnArgs = (
        Array2::from_shape_vec((9, 16), values(144, 12)).unwrap(),
        Array1::from_vec(values(16, 13)),
        Array1::from_vec(values(16, 14)),
    );

    // Naive references, plain loops in f64.
    let gelu_ref: Vec<f32> = x
        .iter()
        .map(|&v| {
            let v = v as f64;
            (0.5 * v * (1.0 + (0.7978845608 * (v + 0.044715 * v * v * v)).tanh())) as f32
        })
        .collect();
    let ln_ref: Vec<f32> = {
        let (x, g, b) = &ln_args;
        let mut out = Vec::new();
        for r in 0..9 {
            let row: Vec<f64> = (0..16).map(|j| x[[r, j]] as f64).collect();
            let mean = row.iter().sum::<f64>() / 16.0;
            let var = row.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / 16.0;
            for j in 0..16 {
                out.push(
                    ((row[j] - mean) / (var + 1e-5).sqrt() * g[j] as f64 + b[j] as f64) as f32,
                );
            }
        }
        out
    };
    let mlp_eager = all_passes::mlp::eager(
        &mlp_args.0,
        &mlp_args.1,
        &mlp_args.2,
        &mlp_args.3,
        &mlp_args.4,
    )
    .unwrap();
    let folded_ref: Vec<f32> = x.iter().map(|v| v / 4.0).collect();

    for (name, run) in VARIANTS {
        close(
            (run.gelu)(&x).as_slice().unwrap(),
            &gelu_ref,
            &format!("{name} gelu"),
        );
        close(
            (run.layernorm)(&ln_args).as_slice().unwrap(),
            &ln_ref,
            &format!("{name} layernorm"),
        );
        close(
            (run.mlp)(&mlp_args).as_slice().unwrap(),
            mlp_eager.as_slice().unwrap(),
            &format!("{name} mlp"),
        );
        for limit in [f32::INFINITY, 0.0] {
            let l = arr0(limit);
            let eager = all_passes::convnet::eager(
                &conv_args.0,
                &conv_args.1,
                &conv_args.2,
                &conv_args.3,
                &conv_args.4,
                &l,
            )
            .unwrap();
            close(
                (run.convnet)(&conv_args, &l).as_slice().unwrap(),
                eager.as_slice().unwrap(),
                &format!("{name} convnet {limit}"),
            );
        }
        let (y, c) = (run.folded)(&x);
        close(
            y.as_slice().unwrap(),
            &folded_ref,
            &format!("{name} folded"),
        );
        assert_eq!(c[()], 8, "{name}");
    }
    // The eager paths agree with the references too.
    close(
        all_passes::gelu::eager(&x).unwrap().as_slice().unwrap(),
        &gelu_ref,
        "eager gelu",
    );
    close(
        all_passes::layernorm::eager(&ln_args.0, &ln_args.1, &ln_args.2)
            .unwrap()
            .as_slice()
            .unwrap(),
        &ln_ref,
        "eager layernorm",
    );
}

#[test]
fn the_graph_lists_the_passes_that_ran() {
    assert_eq!(
        all_passes::gelu::graph().passes,
        vec!["fold", "simplify", "cse", "dce", "fusion"]
    );
    assert_eq!(
        no_fusion::gelu::graph().passes,
        vec!["fold", "simplify", "cse", "dce"]
    );
    assert!(none::gelu::graph().passes.is_empty());
    // Without fusion every op is its own group; with it, one loop.
    assert_eq!(all_passes::gelu::graph().groups.len(), 1);
    assert!(no_fusion::gelu::graph().groups.len() >= 8);
}

mod in_place {
    use grafo::prelude::*;

    #[graph]
    pub fn chain(x: Tensor<f32, R, 33>) -> Tensor<f32, R, 33> {
        let a = softmax(x, -1);
        let b = exp(a) * 2.0 + a;
        softmax(b, -1)
    }
}

#[test]
fn in_place_groups_give_the_same_result_as_eager() {
    let x = Array2::from_shape_vec((9, 33), values(297, 3)).unwrap();
    let g = in_place::chain::graph();
    assert!(g.groups.iter().any(|gr| gr.in_place), "{:#?}", g.groups);
    let a = in_place::chain(&x).unwrap();
    let b = in_place::chain::eager(&x).unwrap();
    close(
        a.as_slice().unwrap(),
        b.as_slice().unwrap(),
        "in-place chain",
    );
}
