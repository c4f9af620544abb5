//! Product dims in `#[graph]` signatures (`Tensor<f32, {B * 4}, 3>`): checked against their
//! factors, or binding their one free symbol from the axis's size, on the compiled path, its
//! eager twin and `Session`; and bound from the arguments at a call inside a `#[graph] mod`.
//! Each is checked compiled vs eager vs a naive reference written here.

use grafo::ndarray::{Array1, Array2, Array3, ArrayD, IxDyn};
use grafo::prelude::*;
use grafo::Error;

/// `B` is bound by `y`'s plain dim; `x`'s `{B * 4}` is checked against it.
#[graph]
fn heads(x: Tensor<f32, { B * 4 }, 3>, y: Tensor<f32, B, 3>) -> Tensor<f32, B, 4, 3> {
    reshape(x, [B, 4, 3]) * reshape(y, [B, 1, 3])
}

/// `B` appears only in the product: the axis's size divided by 4 binds it.
#[graph]
fn head_sums(x: Tensor<f32, { B * 4 }, 3>) -> Tensor<f32, B, 3> {
    reduce_sum(reshape(x, [B, 4, 3]), 1)
}

/// `H` is bound by `h` (a later parameter); `B` by `x`'s size divided by `H`.
#[graph]
fn rows_times(x: Tensor<f32, { B * H }>, h: Tensor<f32, H>) -> Tensor<f32, B, H> {
    reshape(x, [B, H]) * h
}

/// Every symbol of the product is bound by plain dims, so its size is only checked.
#[graph]
fn flat_plus(x: Tensor<f32, { B * H }>, m: Tensor<f32, B, H>) -> Tensor<f32, { B * H }> {
    x + reshape(m, [-1])
}

#[graph]
mod split_heads {
    /// The callee: its `R` is bound from the argument's `B*4` divided by 4.
    pub fn head_means(x: Tensor<f32, { R * 4 }, 3>) -> Tensor<f32, R, 3> {
        reduce_mean(reshape(x, [R, 4, 3]), 1)
    }

    /// The callee's `R` bound by a plain dim of its second argument, the product checked.
    pub fn scale_heads(x: Tensor<f32, { R * 4 }, 3>, s: Tensor<f32, R, 1>) -> Tensor<f32, R, 4, 3> {
        reshape(x, [R, 4, 3]) * reshape(s, [R, 1, 1])
    }

    /// The caller: the arguments' dim is `B*4`, from a reshape.
    pub fn caller(
        x: Tensor<f32, B, 4, 3>,
        s: Tensor<f32, B, 1>,
    ) -> (Tensor<f32, B, 3>, Tensor<f32, B, 4, 3>) {
        let flat = reshape(x, [B * 4, 3]);
        (head_means(flat), scale_heads(flat, s))
    }
}

fn filled(shape: &[usize], seed: u32) -> ArrayD<f32> {
    let n: usize = shape.iter().product();
    let v: Vec<f32> = (0..n)
        .map(|i| {
            let h = (i as u32)
                .wrapping_mul(2654435761)
                .wrapping_add(seed.wrapping_mul(40503));
            ((h >> 8) % 2001) as f32 / 1000.0 - 1.0
        })
        .collect();
    ArrayD::from_shape_vec(IxDyn(shape), v).unwrap()
}

fn two(a: ArrayD<f32>) -> Array2<f32> {
    a.into_dimensionality().unwrap()
}

fn one(a: ArrayD<f32>) -> Array1<f32> {
    a.into_dimensionality().unwrap()
}

fn product_err(r: Result<impl std::fmt::Debug, Error>) -> (String, usize, String, String) {
    match r {
        Err(Error::InputProductDim {
            param,
            axis,
            dim,
            message,
            ..
        }) => (param, axis, dim, message),
        other => panic!("expected Error::InputProductDim, got {other:?}"),
    }
}

#[test]
fn a_product_checked_against_a_bound_symbol() {
    for b in [0usize, 1, 3, 7] {
        let x = two(filled(&[b * 4, 3], 1));
        let y = two(filled(&[b, 3], 2));
        let c = heads(&x, &y).unwrap();
        let e = heads::eager(&x, &y).unwrap();
        let mut session = Session::default();
        let r = heads::run(&mut session, &x, &y).unwrap();
        assert_eq!(c.shape(), &[b, 4, 3]);
        assert_eq!(c, e, "compiled vs eager, b {b}");
        assert_eq!(c, r, "compiled vs session, b {b}");
        let mut want = Array3::<f32>::zeros((b, 4, 3));
        for i in 0..b {
            for h in 0..4 {
                for j in 0..3 {
                    want[[i, h, j]] = x[[i * 4 + h, j]] * y[[i, j]];
                }
            }
        }
        assert_eq!(c, want, "b {b}");
    }
}

#[test]
fn a_product_binds_its_one_free_symbol() {
    for b in [0usize, 1, 3, 9] {
        let x = two(filled(&[b * 4, 3], 3));
        let c = head_sums(&x).unwrap();
        let e = head_sums::eager(&x).unwrap();
        let mut session = Session::default();
        let r = head_sums::run(&mut session, &x).unwrap();
        assert_eq!(c.dim(), (b, 3));
        assert_eq!(c, e, "compiled vs eager, b {b}");
        assert_eq!(c, r, "compiled vs session, b {b}");
        for i in 0..b {
            for j in 0..3 {
                // The reference sums in the same order as the reduction's scalar loop.
                let want: f64 = (0..4).map(|h| f64::from(x[[i * 4 + h, j]])).sum();
                assert!(
                    (f64::from(c[[i, j]]) - want).abs() < 1e-5,
                    "b {b} [{i},{j}]"
                );
            }
        }
    }
}

#[test]
fn a_free_symbol_bound_by_dividing_by_another_symbol() {
    for (b, h) in [(0usize, 3usize), (1, 1), (2, 5), (4, 1), (3, 0)] {
        let x = one(filled(&[b * h], 4));
        let hv = one(filled(&[h], 5));
        if h == 0 {
            // `H` = 0 leaves `B` without a size: an `Err`, on every path.
            for r in [
                product_err(rows_times(&x, &hv)),
                product_err(rows_times::eager(&x, &hv)),
            ] {
                assert_eq!((r.0.as_str(), r.1, r.2.as_str()), ("x", 0, "B*H"));
            }
            continue;
        }
        let c = rows_times(&x, &hv).unwrap();
        let e = rows_times::eager(&x, &hv).unwrap();
        assert_eq!(c.dim(), (b, h));
        assert_eq!(c, e);
        for i in 0..b {
            for j in 0..h {
                assert_eq!(c[[i, j]], x[i * h + j] * hv[j], "b {b} h {h}");
            }
        }
    }
}

#[test]
fn a_product_output_and_fully_bound_product_input() {
    for (b, h) in [(0usize, 2usize), (1, 1), (3, 4)] {
        let x = one(filled(&[b * h], 6));
        let m = two(filled(&[b, h], 7));
        let c = flat_plus(&x, &m).unwrap();
        let e = flat_plus::eager(&x, &m).unwrap();
        assert_eq!(c, e);
        let want: Vec<f32> = (0..b * h).map(|k| x[k] + m[[k / h, k % h]]).collect();
        assert_eq!(c.to_vec(), want);
    }
    // One element too many: the product's size is checked, not just its divisibility.
    let x = one(filled(&[7], 6));
    let m = two(filled(&[2, 3], 7));
    for r in [
        product_err(flat_plus(&x, &m)),
        product_err(flat_plus::eager(&x, &m)),
    ] {
        assert_eq!((r.0.as_str(), r.1, r.2.as_str()), ("x", 0, "B*H"));
        assert!(r.3.contains("expected size 6, found 7"), "{}", r.3);
    }
}

#[test]
fn not_a_multiple_is_an_err_naming_parameter_axis_dim_and_size() {
    let x = two(filled(&[10, 3], 8));
    let mut session = Session::default();
    for r in [
        head_sums(&x).map(|_| ()),
        head_sums::eager(&x).map(|_| ()),
        head_sums::run(&mut session, &x).map(|_| ()),
    ] {
        let err = r.unwrap_err();
        let text = err.to_string();
        let (param, axis, dim, message) = product_err(Err::<(), _>(err));
        assert_eq!((param.as_str(), axis, dim.as_str()), ("x", 0, "B*4"));
        assert!(
            message.contains("size 10 is not a multiple of 4"),
            "{message}"
        );
        assert!(text.contains("`x` axis 0: declared `B*4`"), "{text}");
        assert!(text.contains("[10, 3]"), "{text}");
    }
}

#[test]
fn a_product_disagreeing_with_its_bound_symbol_is_an_err() {
    // y binds B = 2, so x's first axis must be 8.
    let x = two(filled(&[12, 3], 9));
    let y = two(filled(&[2, 3], 10));
    let mut session = Session::default();
    for r in [
        product_err(heads(&x, &y)),
        product_err(heads::eager(&x, &y)),
        product_err(heads::run(&mut session, &x, &y)),
    ] {
        assert_eq!((r.0.as_str(), r.1, r.2.as_str()), ("x", 0, "B*4"));
        assert!(r.3.contains("expected size 8, found 12"), "{}", r.3);
    }
    // A wrong static axis next to the product is still the plain dim's error.
    let x = two(filled(&[8, 4], 9));
    assert!(matches!(
        heads(&x, &y),
        Err(Error::InputDim { axis: 1, .. })
    ));
}

#[test]
fn a_product_whose_factors_overflow_is_an_err() {
    // B and H of 2^33 each (zero-element arrays): B*H overflows a 64-bit usize.
    let big = 1usize << 33;
    let x = Array1::<f32>::zeros(6);
    let m = Array2::<f32>::zeros((big, 0));
    // `m` is [2^33, 0]: `B` is 2^33, `H` is 0, so `B*H` is 0 and 6 is the wrong size.
    let r = product_err(flat_plus(&x, &m));
    assert!(r.3.contains("expected size 0, found 6"), "{}", r.3);
    // Two plain dims of 2^33 from two zero-element parameters.
    #[graph]
    fn overflow(
        x: Tensor<f32, { B * H }>,
        b: Tensor<f32, B, 0>,
        h: Tensor<f32, H, 0>,
    ) -> Tensor<f32, { B * H }> {
        x * 2.0
    }
    let b = Array2::<f32>::zeros((big, 0));
    let hh = Array2::<f32>::zeros((big, 0));
    for r in [
        product_err(overflow(&x, &b, &hh)),
        product_err(overflow::eager(&x, &b, &hh)),
    ] {
        assert_eq!((r.0.as_str(), r.1, r.2.as_str()), ("x", 0, "B*H"));
        assert!(r.3.contains("overflow"), "{}", r.3);
    }
}

#[test]
fn a_call_binds_the_callees_symbol_from_a_reshaped_argument() {
    for b in [0usize, 1, 5] {
        let x: Array3<f32> = filled(&[b, 4, 3], 11).into_dimensionality().unwrap();
        let s = two(filled(&[b, 1], 12));
        let (means, scaled) = split_heads::caller(&x, &s).unwrap();
        let (means_e, scaled_e) = split_heads::caller::eager(&x, &s).unwrap();
        assert_eq!(means, means_e);
        assert_eq!(scaled, scaled_e);
        assert_eq!(means.shape(), &[b, 3]);
        assert_eq!(scaled.shape(), &[b, 4, 3]);
        for i in 0..b {
            for j in 0..3 {
                let want: f64 = (0..4).map(|h| f64::from(x[[i, h, j]])).sum::<f64>() / 4.0;
                assert!((f64::from(means[[i, j]]) - want).abs() < 1e-5);
                for h in 0..4 {
                    assert_eq!(scaled[[i, h, j]], x[[i, h, j]] * s[[i, 0]]);
                }
            }
        }
    }
    // The callee called directly takes a product dim too.
    let flat = two(filled(&[8, 3], 13));
    let direct = split_heads::head_means(&flat).unwrap();
    assert_eq!(direct.shape(), &[2, 3]);
    assert!(
        product_err(split_heads::head_means(&two(filled(&[9, 3], 13))))
            .3
            .contains("not a multiple of 4")
    );
}

#[test]
fn graph_shows_the_product_form() {
    let text = format!("{:?}", head_sums::graph());
    assert!(text.contains("B*4"), "{text}");
}
