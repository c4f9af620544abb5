//! Host parameters as scalar operands, values fetched twice or through a view, integer pow.

use grafo::prelude::*;

#[graph]
fn host_scalar(x: Tensor<f32, N>, k: f32, n: usize) -> Tensor<f32, N> {
    x * k + n
}

#[graph]
fn same_twice(x: Tensor<f32, N>) -> (Tensor<f32, N>, Tensor<f32, N>) {
    let e = exp(x);
    (e, e)
}

#[graph]
fn tuple_with_cond(x: Tensor<f32, N>, c: Tensor<bool>) -> (Tensor<f32, N>, Tensor<f32, N>) {
    let e = exp(x);
    let mut y = e;
    if c {
        y = e + e;
    }
    (e, y)
}

#[graph]
fn potencia(c: Tensor<i32>, d: Tensor<i32>) -> Tensor<i32> {
    pow(c, d)
}

#[test]
fn host_values_are_scalar_operands() {
    let x = arr1(&[0.0f32, 1.0, 2.5]);
    let want = arr1(&[3.0f32, 5.0, 8.0]);
    assert_eq!(host_scalar(&x, 2.0, 3).unwrap(), want);
    assert_eq!(host_scalar::eager(&x, 2.0, 3).unwrap(), want);
    assert_eq!(
        host_scalar::run(&mut Session::default(), &x, 2.0, 3).unwrap(),
        want
    );
}

#[test]
fn a_value_fetched_twice_is_returned_twice() {
    let x = arr1(&[0.0f32, 1.0]);
    let (a, b) = same_twice(&x).unwrap();
    assert_eq!(a, b);
    assert!((a[1] - std::f32::consts::E).abs() < 1e-6);
    for c in [false, true] {
        let (e, y) = tuple_with_cond(&x, &arr0(c)).unwrap();
        let (ee, ye) = tuple_with_cond::eager(&x, &arr0(c)).unwrap();
        assert_eq!(e, ee);
        assert_eq!(y, ye);
        let factor = if c { 2.0 } else { 1.0 };
        assert!((y[1] - factor * std::f32::consts::E).abs() < 1e-5);
    }
}

#[test]
fn integer_pow() {
    assert_eq!(potencia(&arr0(7), &arr0(2)).unwrap()[()], 49);
    assert_eq!(potencia::eager(&arr0(3), &arr0(4)).unwrap()[()], 81);
}

#[graph]
fn r_computed(x: Tensor<f32, N, 6>) -> Tensor<f32, N, 3, 2> {
    reshape(x + 1.0, [N, 3, -1])
}

#[graph]
fn r_tr(y: Tensor<f32, 4, 6>) -> Tensor<f32, 3, 8> {
    reshape(transpose(y), [3, 8])
}

#[graph]
fn r_twice(x: Tensor<f32, 6>) -> (Tensor<f32, 2, 3>, Tensor<f32, 3, 2>) {
    let e = exp(x);
    (reshape(e, [2, 3]), reshape(e, [3, 2]))
}

#[test]
fn reshapes_of_computed_values_are_returned() {
    let x = Array2::<f32>::ones((2, 6));
    let r = r_computed(&x).unwrap();
    assert_eq!(r.shape(), &[2, 3, 2]);
    assert!(r.iter().all(|&v| v == 2.0));
    assert_eq!(r, r_computed::eager(&x).unwrap());
    let y = Array2::from_shape_fn((4, 6), |(i, j)| (i * 6 + j) as f32);
    let t = r_tr(&y).unwrap();
    let want: Vec<f32> = y.t().iter().copied().collect();
    assert_eq!(t.as_slice().unwrap(), &want[..]);
    let (a, b) = r_twice(&arr1(&[0.0f32, 1.0, 2.0, 3.0, 4.0, 5.0])).unwrap();
    assert_eq!(a.as_slice().unwrap(), b.as_slice().unwrap());
}

/// A value returned next to a view of it (and, in a fork branch, several such pairs): the
/// view's copy is taken before the buffer moves into the results (it used to be read after
/// the move, a rustc borrow error in the emitted code).
#[graph]
#[allow(clippy::type_complexity)]
fn value_and_its_view(
    x: Tensor<f32, 7, 5>,
) -> (
    Tensor<f32, 3, 5>,
    Tensor<f32, 1, 3, 5>,
    Tensor<f32, 5, 3>,
    (
        Tensor<f32, 7, 5>,
        Tensor<f32, 7, 5, 1>,
        Tensor<f32, 7, 1, 5>,
    ),
) {
    let y = x[s![1..4, ..]];
    let z = x[s![..;-1, ..]];
    (
        y,
        expand_dims(y, 0),
        transpose(y),
        (z, expand_dims(z, -1), expand_dims(z, 1)),
    )
}

#[test]
fn a_value_and_its_view_are_both_returned() {
    let x = grafo::ndarray::Array2::from_shape_fn((7, 5), |(i, j)| (i * 10 + j) as f32);
    let y = x.slice(grafo::ndarray::s![1..4, ..]).to_owned();
    let z = x.slice(grafo::ndarray::s![..;-1, ..]).to_owned();
    let runs = [
        value_and_its_view(&x),
        value_and_its_view::eager(&x),
        value_and_its_view::run(&mut Session::default(), &x),
    ];
    for r in runs {
        let (a, b, c, (d, e, f)) = r.unwrap();
        assert_eq!(a, y);
        assert_eq!(b.into_shape_with_order((3, 5)).unwrap(), y);
        assert_eq!(c, y.t());
        assert_eq!(d, z);
        assert_eq!(e.into_shape_with_order((7, 5)).unwrap(), z);
        assert_eq!(f.into_shape_with_order((7, 5)).unwrap(), z);
    }
}

/// The four divisions of f32: `a % b` and `truncatemod(a, b)` are one node after CSE, so the
/// result holds it twice, and the fork that runs the first result apart from the others
/// bound it twice in one pattern (`identifier v3 is bound more than once`).
#[graph]
#[allow(clippy::type_complexity)]
fn divisions(
    a: Tensor<f32, N>,
    b: Tensor<f32, N>,
) -> (
    Tensor<f32, N>,
    Tensor<f32, N>,
    Tensor<f32, N>,
    Tensor<f32, N>,
) {
    (a / b, a % b, floordiv(a, b), truncatemod(a, b))
}

/// One value repeated in every position and nesting: first and last, inside nested tuples,
/// next to a parameter, a constant, a rank-0 reduction, a view and a cond's result that are
/// returned twice too.
#[graph]
#[allow(clippy::type_complexity)]
fn repeats(
    a: Tensor<f32, N>,
    b: Tensor<f32, N>,
    c: Tensor<bool>,
) -> (
    Tensor<f32, N>,
    (
        Tensor<f32, N>,
        Tensor<f32, N>,
        (Tensor<f32, N>, Tensor<f32, N>),
    ),
    Tensor<f32>,
    Tensor<f32, N>,
    (
        (Tensor<f32, 1, N>, Tensor<f32>),
        Tensor<f32, 1, N>,
        Tensor<f32>,
    ),
    (Tensor<f32, N>, Tensor<f32, N>),
    (Tensor<f32, 2>, (Tensor<f32, 2>,)),
    Tensor<f32, N>,
) {
    let m = a % b;
    let d = exp(a) * b;
    let s = reduce_sum(d, 0);
    let v = expand_dims(m, 0);
    let mut y = d;
    if c {
        y = m + 1.0;
    }
    let k = constant([1.5, -0.0]);
    (
        m,
        (m, truncatemod(a, b), (d, m)),
        s,
        a,
        ((v, s), v, s),
        (y, y),
        (k, (k,)),
        m,
    )
}

/// The bits of every element, so that NaN and -0.0 compare too.
fn bits<D: grafo::ndarray::Dimension>(x: &grafo::ndarray::Array<f32, D>) -> Vec<u32> {
    x.iter().map(|v| v.to_bits()).collect()
}

#[test]
fn a_result_may_repeat_a_value_anywhere() {
    let a = arr1(&[7.5f32, -7.5, 3.0, 0.25, -0.0]);
    let b = arr1(&[2.0f32, 2.0, -0.5, 0.0, 3.0]);
    let mut forked = Session::new(SessionConfig {
        inter_op_threads: 2,
        ..Default::default()
    })
    .unwrap();
    let runs = [
        divisions(&a, &b).unwrap(),
        divisions::eager(&a, &b).unwrap(),
        divisions::run(&mut Session::default(), &a, &b).unwrap(),
        divisions::run(&mut forked, &a, &b).unwrap(),
    ];
    let want_mod: Vec<u32> = a.iter().zip(&b).map(|(x, y)| (x % y).to_bits()).collect();
    let want_div: Vec<u32> = a.iter().zip(&b).map(|(x, y)| (x / y).to_bits()).collect();
    for (q, m, f, t) in &runs {
        assert_eq!(bits(q), want_div);
        assert_eq!(bits(m), want_mod);
        assert_eq!(bits(t), want_mod);
        assert_eq!(bits(f), bits(&runs[0].2));
    }
    for c in [false, true] {
        let c = arr0(c);
        let runs = [
            repeats(&a, &b, &c).unwrap(),
            repeats::eager(&a, &b, &c).unwrap(),
            repeats::run(&mut Session::default(), &a, &b, &c).unwrap(),
            repeats::run(&mut forked, &a, &b, &c).unwrap(),
        ];
        for (m, (m1, m2, (d, m3)), s, a1, ((v, s1), v1, s2), (y, y1), (k, (k1,)), m4) in &runs {
            for mm in [m1, m2, m3, m4] {
                assert_eq!(bits(mm), want_mod);
            }
            assert_eq!(bits(m), want_mod);
            assert_eq!(bits(a1), bits(&a));
            assert_eq!(bits(d), bits(&runs[0].1 .2 .0));
            assert_eq!(bits(s), bits(s1));
            assert_eq!(bits(s), bits(s2));
            assert_eq!(v.shape(), &[1, 5]);
            assert_eq!(bits(v), want_mod);
            assert_eq!(bits(v1), want_mod);
            let want_y = if c[()] {
                m.mapv(|x| x + 1.0)
            } else {
                d.clone()
            };
            assert_eq!(bits(y), bits(&want_y));
            assert_eq!(bits(y1), bits(&want_y));
            assert_eq!(k, k1);
            assert_eq!(k[0], 1.5);
            assert!(k[1] == 0.0 && k[1].is_sign_negative());
        }
        for (_, _, s, _, _, (y, _), _, _) in &runs {
            assert_eq!(bits(s), bits(&runs[0].2));
            assert_eq!(bits(y), bits(&runs[0].5 .0));
        }
    }
}
