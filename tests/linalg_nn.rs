//! Issue 10's linear-algebra and NN additions through `#[graph]`: product dims in `reshape`
//! (`[B * 4, 64]`, `-1` standing for `B*4`), N-D broadcast `matmul` with operands
//! transposed in place, and pooling; compiled == eager == a naive reference in this file.

mod refs;

use grafo::ndarray::{ArrayD, Ix2, Ix3, Ix4, IxDyn};
use grafo::prelude::*;
use refs::*;

#[path = "common/entry_points.rs"]
#[macro_use]
mod entry_points;

/// The same row-major elements under another shape.
fn reshaped(x: &ArrayD<f64>, shape: &[usize]) -> ArrayD<f64> {
    let v: Vec<f64> = x.iter().copied().collect();
    ArrayD::from_shape_vec(IxDyn(shape), v).unwrap()
}

// ----- product dims ---------------------------------------------------------------------------

/// Heads merged into the batch and split again, as attention does; the middle values have
/// the product dims `B*4` and `B*256`.
#[graph]
fn merge_heads(
    x: Tensor<f32, B, 4, 6, 5>,
) -> (
    Tensor<f32, B, 24, 5>,
    Tensor<f32, B, 120>,
    Tensor<f32, B, 4, 30>,
    Tensor<f32, B, 4, 6>,
) {
    let merged = reshape(x, [B * 4, 6, 5]);
    let scaled = merged * 2.0 + 1.0;
    let back = reshape(scaled, [B, -1, 5]);
    let flat = reshape(reshape(x, [4 * B, 30]), [B, -1]);
    let inferred = reshape(x, [-1, 6, 5]);
    let split = reshape(inferred, [B, 4, -1]);
    let summed = reshape(reduce_sum(reshape(x, [(B * 4) * 6, 5]), 1), [B, 4, 6]);
    (back, flat, split, summed)
}

#[test]
fn reshape_product_dims() {
    for b in [1usize, 2, 7, 0] {
        let x = rand_arr(100 + b as u64, Ix4(b, 4, 6, 5), -1.0, 1.0);
        let xd = to_f64(&x);
        let back = reshaped(&xd.mapv(|v| v * 2.0 + 1.0), &[b, 24, 5]);
        let flat = reshaped(&xd, &[b, 120]);
        let split = reshaped(&xd, &[b, 4, 30]);
        let summed = xd.sum_axis(grafo::ndarray::Axis(3));
        for (how, (r_back, r_flat, r_split, r_sum)) in runs_ok!(merge_heads(&x)) {
            assert_close(&format!("merge/split heads B={b} {how}"), &r_back, &back);
            assert_exact(&format!("flatten via B*4 B={b} {how}"), &r_flat, &flat);
            assert_exact(
                &format!("-1 as B*4 then split B={b} {how}"),
                &r_split,
                &split,
            );
            assert_close(
                &format!("reduce over B*24 rows B={b} {how}"),
                &r_sum,
                &summed,
            );
        }
    }
}

/// Two symbols multiplied: `[B, H, 3]` as `[B*H, 3]` and back.
#[graph]
fn two_symbols(x: Tensor<f32, B, H, 3>, y: Tensor<f32, H, 3>) -> Tensor<f32, B, H, 3> {
    let rows = reshape(x, [B * H, 3]);
    let again = reshape(rows + 1.0, [B, H, 3]);
    again * y
}

#[test]
fn reshape_two_symbols() {
    for (b, h) in [(1usize, 1usize), (3, 5), (2, 0)] {
        let x = rand_arr(7, Ix3(b, h, 3), -1.0, 1.0);
        let y = rand_arr(8, Ix2(h, 3), -1.0, 1.0);
        let want = ArrayD::from_shape_fn(IxDyn(&[b, h, 3]), |ix| {
            (x[[ix[0], ix[1], ix[2]]] as f64 + 1.0) * y[[ix[1], ix[2]]] as f64
        });
        for (how, r) in runs_ok!(two_symbols(&x, &y)) {
            assert_close(&format!("B*H rows b={b} h={h} {how}"), &r, &want);
        }
    }
}

/// A product dim that overflows `usize` at run time is an error, not a wrong size.
#[graph]
fn huge_product(x: Tensor<f32, B, 0>) -> Tensor<f32, 0> {
    reduce_sum(reshape(x, [B * 8, 0]), 0)
}

#[test]
fn product_dim_overflow_is_an_error() {
    let x = ArrayD::<f32>::zeros(IxDyn(&[3, 0]))
        .into_dimensionality::<Ix2>()
        .unwrap();
    for (how, r) in runs_ok!(huge_product(&x)) {
        assert_eq!(r.len(), 0, "{how}");
    }
    let big = usize::MAX / 4;
    let x = grafo::ndarray::Array2::<f32>::zeros((big, 0));
    let errs = [
        huge_product(&x).unwrap_err(),
        huge_product::eager(&x).unwrap_err(),
        huge_product::run(&mut Session::default(), &x).unwrap_err(),
    ];
    for e in errs {
        let text = e.to_string();
        assert!(
            text.contains("B*8") && text.contains("overflows"),
            "unexpected error: {text}"
        );
    }
}

/// The product dims appear in `graph()` as `B*4`.
#[test]
fn product_dims_in_graph_def() {
    let g = merge_heads::graph();
    let shown: Vec<String> = g
        .nodes
        .iter()
        .map(|n| {
            let dims: Vec<String> = n.shape.iter().map(|d| d.to_string()).collect();
            format!("[{}]", dims.join(", "))
        })
        .collect();
    assert!(
        shown.iter().any(|s| s == "[B*4, 6, 5]"),
        "no [B*4, 6, 5] among {shown:?}"
    );
}

// ----- N-D matmul -----------------------------------------------------------------------------

/// NumPy's `@` in f64: batch axes broadcast, then `[m, k] x [k, n]` per matrix.
fn ref_matmul_nd(a: &ArrayD<f64>, b: &ArrayD<f64>) -> ArrayD<f64> {
    let (sa, sb) = (a.shape(), b.shape());
    let (ra, rb) = (sa.len(), sb.len());
    let (m, k, n) = (sa[ra - 2], sa[ra - 1], sb[rb - 1]);
    assert_eq!(k, sb[rb - 2]);
    let batch = broadcast_shape(&sa[..ra - 2], &sb[..rb - 2]);
    let mut shape = batch.clone();
    shape.extend([m, n]);
    ArrayD::from_shape_fn(IxDyn(&shape), |ix| {
        let ix = grafo::ndarray::Dimension::slice(&ix).to_vec();
        let pick = |s: &[usize], row: usize, col: usize| {
            let lead = batch.len() + 2 - s.len();
            let mut at: Vec<usize> = (0..s.len() - 2)
                .map(|i| if s[i] == 1 { 0 } else { ix[lead + i] })
                .collect();
            at.extend([row, col]);
            at
        };
        let (i, j) = (ix[batch.len()], ix[batch.len() + 1]);
        (0..k)
            .map(|p| a[IxDyn(&pick(sa, i, p))] * b[IxDyn(&pick(sb, p, j))])
            .sum()
    })
}

/// Compiled and eager must agree bit for bit, and both with the reference.
fn check_product<T: AsF64, D: grafo::ndarray::Dimension>(
    what: &str,
    runs: &[(&str, grafo::ndarray::Array<T, D>)],
    want: &ArrayD<f64>,
) {
    let eager = to_f64(&runs[1].1);
    for (how, r) in runs {
        assert_exact(&format!("{what}: {how} == eager"), r, &eager);
        assert_close(&format!("{what}: {how} vs reference"), r, want);
    }
}

#[graph]
fn attention_scores(
    q: Tensor<f32, B, 3, S, 8>,
    k: Tensor<f32, B, 3, 8, S>,
    v: Tensor<f32, B, 3, S, 8>,
) -> (Tensor<f32, B, 3, S, S>, Tensor<f32, B, 3, S, 8>) {
    let scores = matmul(q, k) * 0.25;
    (scores, matmul(scores, v))
}

#[test]
fn matmul_4d_batched() {
    for (b, s) in [(1usize, 1usize), (2, 7), (0, 5), (3, 70)] {
        let q = rand_arr(1, Ix4(b, 3, s, 8), -1.0, 1.0);
        let k = rand_arr(2, Ix4(b, 3, 8, s), -1.0, 1.0);
        let v = rand_arr(3, Ix4(b, 3, s, 8), -1.0, 1.0);
        let scores = ref_matmul_nd(&to_f64(&q), &to_f64(&k)).mapv(|x| x * 0.25);
        let out = ref_matmul_nd(&scores, &to_f64(&v));
        let r = runs_ok!(attention_scores(&q, &k, &v));
        let firsts: Vec<_> = r.iter().map(|(h, x)| (*h, x.0.clone())).collect();
        let seconds: Vec<_> = r.iter().map(|(h, x)| (*h, x.1.clone())).collect();
        check_product(&format!("q @ k b={b} s={s}"), &firsts, &scores);
        check_product(&format!("scores @ v b={b} s={s}"), &seconds, &out);
    }
}

/// A 3-D batch against one matrix, with a fused bias and relu; a matrix against a batch.
#[graph]
fn dense_3d(
    x: Tensor<f32, B, S, D>,
    w: Tensor<f32, D, E>,
    bias: Tensor<f32, E>,
    m: Tensor<f32, S, D>,
    xt: Tensor<f32, B, D, E>,
) -> (Tensor<f32, B, S, E>, Tensor<f32, B, S, E>) {
    (relu(matmul(x, w) + bias), matmul(m, xt))
}

#[test]
fn matmul_3d_by_2d_and_2d_by_3d() {
    for (b, s, dd, e) in [
        (1usize, 1usize, 1usize, 1usize),
        (2, 7, 5, 3),
        (3, 0, 4, 2),
        (2, 9, 0, 6),
        (4, 65, 70, 67),
    ] {
        let x = rand_arr(4, Ix3(b, s, dd), -1.0, 1.0);
        let w = rand_arr(5, Ix2(dd, e), -1.0, 1.0);
        let bias = rand_arr(6, grafo::ndarray::Ix1(e), -1.0, 1.0);
        let m = rand_arr(7, Ix2(s, dd), -1.0, 1.0);
        let xt = rand_arr(8, Ix3(b, dd, e), -1.0, 1.0);
        let bd = to_f64(&bias);
        let dense = ref_matmul_nd(&to_f64(&x), &to_f64(&w));
        let dense =
            ArrayD::from_shape_fn(dense.raw_dim(), |ix| (dense[&ix] + bd[[ix[2]]]).max(0.0));
        let left = ref_matmul_nd(&to_f64(&m), &to_f64(&xt));
        let r = runs_ok!(dense_3d(&x, &w, &bias, &m, &xt));
        let firsts: Vec<_> = r.iter().map(|(h, x)| (*h, x.0.clone())).collect();
        let seconds: Vec<_> = r.iter().map(|(h, x)| (*h, x.1.clone())).collect();
        check_product(
            &format!("relu(x @ w + b) {b},{s},{dd},{e}"),
            &firsts,
            &dense,
        );
        check_product(&format!("m @ xt {b},{s},{dd},{e}"), &seconds, &left);
    }
}

/// Batch axes that broadcast partially: `[B, 1]` against `[H]`, and a symbol against 1.
#[graph]
fn broadcast_batches(
    a: Tensor<f32, B, 1, 4, 5>,
    b: Tensor<f32, H, 5, 3>,
    c: Tensor<i32, 1, H, 2, 5>,
    d: Tensor<i32, B, 1, 5, 2>,
) -> (Tensor<f32, B, H, 4, 3>, Tensor<i32, B, H, 2, 2>) {
    (matmul(a, b), matmul(c, d))
}

#[test]
fn matmul_broadcast_batches() {
    for (bb, h) in [(1usize, 1usize), (2, 3), (0, 2), (3, 0)] {
        let a = rand_arr(9, Ix4(bb, 1, 4, 5), -1.0, 1.0);
        let b = rand_arr(10, Ix3(h, 5, 3), -1.0, 1.0);
        let c = rand_i32(11, Ix4(1, h, 2, 5), -1000, 1000);
        let d = rand_i32(12, Ix4(bb, 1, 5, 2), -1000, 1000);
        let want_f = ref_matmul_nd(&to_f64(&a), &to_f64(&b));
        let want_i = ref_matmul_nd(&to_f64(&c), &to_f64(&d));
        let r = runs_ok!(broadcast_batches(&a, &b, &c, &d));
        let firsts: Vec<_> = r.iter().map(|(h, x)| (*h, x.0.clone())).collect();
        let seconds: Vec<_> = r.iter().map(|(h, x)| (*h, x.1.clone())).collect();
        check_product(&format!("[B,1] @ [H] b={bb} h={h}"), &firsts, &want_f);
        check_product(
            &format!("int [1,H] @ [B,1] b={bb} h={h}"),
            &seconds,
            &want_i,
        );
    }
}

/// `matmul(a, transpose(b))`: 2-D (default perm), 4-D (`[0, 1, 3, 2]`) with a fused scale,
/// integers, and a transpose that is also used on its own.
#[graph]
fn transposed_operands(
    a: Tensor<f32, M, K>,
    b: Tensor<f32, N, K>,
    q: Tensor<f32, B, 2, S, 8>,
    k: Tensor<f32, B, 2, S, 8>,
    ia: Tensor<i64, M, K>,
    ib: Tensor<i64, N, K>,
) -> (
    Tensor<f32, M, N>,
    Tensor<f32, B, 2, S, S>,
    Tensor<i64, M, N>,
    Tensor<f32, K, N>,
) {
    let bt = transpose(b);
    (
        matmul(a, bt),
        matmul(q, transpose(k, [0, 1, 3, 2])) * 0.125,
        matmul(ia, transpose(ib, [1, 0])),
        bt + 1.0,
    )
}

#[test]
fn matmul_transposed_in_place() {
    for (mm, kk, nn, b, s) in [
        (1usize, 1usize, 1usize, 1usize, 1usize),
        (7, 5, 3, 2, 7),
        (0, 4, 3, 0, 3),
        (5, 0, 4, 1, 0),
        (70, 300, 90, 3, 65),
    ] {
        let a = rand_arr(13, Ix2(mm, kk), -1.0, 1.0);
        let bm = rand_arr(14, Ix2(nn, kk), -1.0, 1.0);
        let q = rand_arr(15, Ix4(b, 2, s, 8), -1.0, 1.0);
        let k = rand_arr(16, Ix4(b, 2, s, 8), -1.0, 1.0);
        let ia = rand_arr(17, Ix2(mm, kk), -1e3, 1e3).mapv(|v| v as i64);
        let ib = rand_arr(18, Ix2(nn, kk), -1e3, 1e3).mapv(|v| v as i64);
        let bt = ref_transpose(&to_f64(&bm), &[1, 0]);
        let want_ab = ref_matmul_nd(&to_f64(&a), &bt);
        let want_qk = ref_matmul_nd(&to_f64(&q), &ref_transpose(&to_f64(&k), &[0, 1, 3, 2]))
            .mapv(|v| v * 0.125);
        let want_int = ref_matmul_nd(&to_f64(&ia), &ref_transpose(&to_f64(&ib), &[1, 0]));
        let r = runs_ok!(transposed_operands(&a, &bm, &q, &k, &ia, &ib));
        let what = format!("{mm}x{kk}x{nn} b={b} s={s}");
        let pick = |f: &dyn Fn(&(_, _, _, _)) -> ArrayD<f64>| -> Vec<(&str, ArrayD<f64>)> {
            r.iter().map(|(h, x)| (*h, f(x))).collect()
        };
        check_product(
            &format!("a @ b^T {what}"),
            &pick(&|x| to_f64(&x.0)),
            &want_ab,
        );
        check_product(
            &format!("q @ k^T {what}"),
            &pick(&|x| to_f64(&x.1)),
            &want_qk,
        );
        check_product(
            &format!("int a @ b^T {what}"),
            &pick(&|x| to_f64(&x.2)),
            &want_int,
        );
        check_product(
            &format!("b^T + 1 {what}"),
            &pick(&|x| to_f64(&x.3)),
            &bt.mapv(|v| v + 1.0),
        );
    }
}

/// The compiled graph reads the transposed operands in place: no transpose node feeds a
/// matmul, and the matmuls say `transpose_b`.
#[test]
fn transposed_operand_is_not_materialised() {
    let g = transposed_operands::graph();
    let mut flagged = 0;
    for n in g
        .nodes
        .iter()
        .filter(|n| n.op == "matmul" && n.group.is_some())
    {
        for &i in &n.inputs {
            assert_ne!(
                g.nodes[i].op, "transpose",
                "matmul {} reads a transpose",
                n.name
            );
        }
        flagged += n
            .attrs
            .iter()
            .any(|(k, v)| k == "transpose_b" && v == "true") as usize;
    }
    assert_eq!(flagged, 3, "three matmuls read b transposed");
    // The one transpose left is `bt + 1.0`'s, which is an output of its own.
    let live_transposes = g
        .nodes
        .iter()
        .filter(|n| n.op == "transpose" && n.group.is_some())
        .count();
    assert_eq!(live_transposes, 1);
}

/// `matmul(transpose(a), b)` and `matmul(transpose(a), transpose(b))` (TF's `transpose_a`,
/// NumPy's `a.T @ b`): 2-D, 3-D with a broadcast batch and a fused bias + relu, integers, and
/// a transpose that is also used on its own.
#[graph]
#[allow(clippy::type_complexity)]
fn transposed_left(
    a: Tensor<f32, K, M>,
    b: Tensor<f32, K, N>,
    bt: Tensor<f32, N, K>,
    x: Tensor<f32, B, S, 8>,
    w: Tensor<f32, S, 5>,
    bias: Tensor<f32, 5>,
    ia: Tensor<i32, K, M>,
    ib: Tensor<i32, K, N>,
) -> (
    Tensor<f32, M, N>,
    Tensor<f32, M, N>,
    Tensor<f32, B, 8, 5>,
    Tensor<i32, M, N>,
    Tensor<f32, M, K>,
) {
    let at = transpose(a);
    (
        matmul(at, b),
        matmul(transpose(a, [1, 0]), transpose(bt)),
        relu(matmul(transpose(x, [0, 2, 1]), w) + bias),
        matmul(transpose(ia), ib),
        at * 2.0,
    )
}

#[test]
fn matmul_left_transposed_in_place() {
    for (mm, kk, nn, b, s) in [
        (1usize, 1usize, 1usize, 1usize, 1usize),
        (7, 5, 3, 2, 7),
        (0, 4, 3, 0, 3),
        (5, 0, 4, 1, 0),
        (4, 3, 0, 2, 1),
        (1023, 7, 9, 1, 1023),
        (3, 1023, 5, 2, 33),
        (70, 300, 90, 3, 65),
    ] {
        let a = rand_arr(21, Ix2(kk, mm), -1.0, 1.0);
        let bm = rand_arr(22, Ix2(kk, nn), -1.0, 1.0);
        let btm = rand_arr(23, Ix2(nn, kk), -1.0, 1.0);
        let x = rand_arr(24, Ix3(b, s, 8), -1.0, 1.0);
        let w = rand_arr(25, Ix2(s, 5), -1.0, 1.0);
        let bias = rand_arr(26, grafo::ndarray::Ix1(5), -1.0, 1.0);
        let ia = rand_arr(27, Ix2(kk, mm), -1e3, 1e3).mapv(|v| v as i32);
        let ib = rand_arr(28, Ix2(kk, nn), -1e3, 1e3).mapv(|v| v as i32);
        let at = ref_transpose(&to_f64(&a), &[1, 0]);
        let want_ab = ref_matmul_nd(&at, &to_f64(&bm));
        let want_abt = ref_matmul_nd(&at, &ref_transpose(&to_f64(&btm), &[1, 0]));
        let xw = ref_matmul_nd(&ref_transpose(&to_f64(&x), &[0, 2, 1]), &to_f64(&w));
        let bias64 = to_f64(&bias);
        let want_xw = ArrayD::from_shape_fn(xw.raw_dim(), |ix| ref_relu(xw[&ix] + bias64[[ix[2]]]));
        let want_int = ref_matmul_nd(&ref_transpose(&to_f64(&ia), &[1, 0]), &to_f64(&ib));
        let r = runs_ok!(transposed_left(&a, &bm, &btm, &x, &w, &bias, &ia, &ib));
        let what = format!("{mm}x{kk}x{nn} b={b} s={s}");
        let pick = |f: &dyn Fn(&(_, _, _, _, _)) -> ArrayD<f64>| -> Vec<(&str, ArrayD<f64>)> {
            r.iter().map(|(h, x)| (*h, f(x))).collect()
        };
        check_product(
            &format!("a^T @ b {what}"),
            &pick(&|x| to_f64(&x.0)),
            &want_ab,
        );
        check_product(
            &format!("a^T @ bt^T {what}"),
            &pick(&|x| to_f64(&x.1)),
            &want_abt,
        );
        check_product(
            &format!("relu(x^T @ w + bias) {what}"),
            &pick(&|x| to_f64(&x.2)),
            &want_xw,
        );
        check_product(
            &format!("int a^T @ b {what}"),
            &pick(&|x| to_f64(&x.3)),
            &want_int,
        );
        check_product(
            &format!("a^T * 2 {what}"),
            &pick(&|x| to_f64(&x.4)),
            &at.mapv(|v| v * 2.0),
        );
    }
}

/// No matmul of `transposed_left` reads a transpose: all four are flagged `transpose_a`, one
/// of them also `transpose_b`, and the only transpose left is the one returned on its own.
#[test]
fn left_transposed_operand_is_not_materialised() {
    let g = transposed_left::graph();
    let (mut flagged_a, mut flagged_both) = (0, 0);
    let flag = |n: &grafo::NodeDef, key: &str| n.attrs.iter().any(|(k, v)| k == key && v == "true");
    for n in g
        .nodes
        .iter()
        .filter(|n| n.op == "matmul" && n.group.is_some())
    {
        for &i in &n.inputs {
            assert_ne!(
                g.nodes[i].op, "transpose",
                "matmul {} reads a transpose",
                n.name
            );
        }
        flagged_a += flag(n, "transpose_a") as usize;
        flagged_both += (flag(n, "transpose_a") && flag(n, "transpose_b")) as usize;
    }
    assert_eq!((flagged_a, flagged_both), (4, 1));
    let live_transposes = g
        .nodes
        .iter()
        .filter(|n| n.op == "transpose" && n.group.is_some())
        .count();
    assert_eq!(live_transposes, 1);
}

// ----- pooling --------------------------------------------------------------------------------

#[graph]
fn pools(
    x: Tensor<f32, N, 7, 9, 3>,
) -> (
    Tensor<f32, N, 3, 4, 3>,
    Tensor<f32, N, 4, 5, 3>,
    Tensor<f32, N, 3, 3, 3>,
    Tensor<f32, N, 7, 9, 3>,
    Tensor<f32, N, 4, 3, 3>,
    Tensor<f32, N, 4, 5, 3>,
) {
    (
        max_pool2d(x, 2, 2, VALID),
        max_pool2d(x, 2, 2, SAME),
        max_pool2d(x, [3, 2], [3, 3], SAME),
        avg_pool2d(x, 3, 1, SAME),
        avg_pool2d(x, [1, 3, 3, 1], [1, 2, 3, 1], SAME),
        avg_pool2d(x, [2, 3], 2, SAME),
    )
}

#[test]
fn pooling_valid_and_same() {
    for n in [1usize, 2, 0] {
        let mut x = rand_arr(20 + n as u64, Ix4(n, 7, 9, 3), -1.0, 1.0);
        if n == 2 {
            x[[1, 3, 4, 1]] = f32::NAN;
            x[[0, 6, 8, 2]] = f32::INFINITY;
            x[[0, 0, 0, 0]] = f32::NEG_INFINITY;
        }
        let xd = to_f64(&x);
        let want = [
            ref_pool(&xd, [2, 2], [2, 2], false, true),
            ref_pool(&xd, [2, 2], [2, 2], true, true),
            ref_pool(&xd, [3, 2], [3, 3], true, true),
            ref_pool(&xd, [3, 3], [1, 1], true, false),
            ref_pool(&xd, [3, 3], [2, 3], true, false),
            ref_pool(&xd, [2, 3], [2, 2], true, false),
        ];
        let names = [
            "max 2/2 VALID",
            "max 2/2 SAME",
            "max [3,2]/[3,3] SAME",
            "avg 3/1 SAME",
            "avg 4-list SAME",
            "avg [2,3]/2 SAME",
        ];
        let r = runs_ok!(pools(&x));
        let eager = &r[1].1;
        for (how, got) in &r {
            let got = [&got.0, &got.1, &got.2, &got.3, &got.4, &got.5];
            let e = [&eager.0, &eager.1, &eager.2, &eager.3, &eager.4, &eager.5];
            for i in 0..6 {
                let what = format!("{} n={n} {how}", names[i]);
                assert_close(&what, got[i], &want[i]);
                let bits = |a: &grafo::ndarray::Array4<f32>| {
                    a.iter().map(|v| v.to_bits()).collect::<Vec<_>>()
                };
                assert_eq!(
                    bits(got[i]),
                    bits(e[i]),
                    "{what}: compiled and eager differ"
                );
            }
        }
    }
}

/// Hand-checked against TF's rule: 5x5 of 0..24, 2x2 windows, stride 2, SAME: pad_total is 1,
/// all after, so the last row and column of windows see one valid row or column.
#[graph]
fn pool_5x5(x: Tensor<f64, 1, 5, 5, 1>) -> (Tensor<f64, 1, 3, 3, 1>, Tensor<f64, 1, 3, 3, 1>) {
    (max_pool2d(x, 2, 2, SAME), avg_pool2d(x, 2, 2, SAME))
}

#[test]
fn pooling_matches_tf_padding_rule() {
    let x = grafo::ndarray::Array4::from_shape_fn((1, 5, 5, 1), |(_, i, j, _)| (i * 5 + j) as f64);
    let max = [6.0, 8.0, 9.0, 16.0, 18.0, 19.0, 21.0, 23.0, 24.0];
    let avg = [3.0, 5.0, 6.5, 13.0, 15.0, 16.5, 20.5, 22.5, 24.0];
    for (how, (m, a)) in runs_ok!(pool_5x5(&x)) {
        assert_eq!(m.iter().copied().collect::<Vec<_>>(), max, "max {how}");
        assert_eq!(a.iter().copied().collect::<Vec<_>>(), avg, "avg {how}");
    }
}

/// Integer max pooling, a symbolic batch and spatial dims kept by SAME at stride 1, and a
/// window of 1 with VALID on symbolic dims.
#[graph]
fn pool_symbolic(
    x: Tensor<i32, N, H, W, 2>,
    y: Tensor<f32, N, H, W, 2>,
) -> (Tensor<i32, N, H, W, 2>, Tensor<f32, N, H, W, 2>) {
    (max_pool2d(x, 3, 1, SAME), avg_pool2d(y, 1, 1, VALID))
}

#[test]
fn pooling_symbolic_and_int() {
    for (n, h, w) in [(1usize, 1usize, 1usize), (2, 7, 4), (1, 0, 3), (3, 33, 17)] {
        let x = rand_i32(30, Ix4(n, h, w, 2), i32::MIN / 2, i32::MAX / 2);
        let y = rand_arr(31, Ix4(n, h, w, 2), -1.0, 1.0);
        let want_x = ref_pool(&to_f64(&x), [3, 3], [1, 1], true, true);
        for (how, (px, py)) in runs_ok!(pool_symbolic(&x, &y)) {
            assert_exact(&format!("int max {n},{h},{w} {how}"), &px, &want_x);
            assert_exact(&format!("avg 1x1 {n},{h},{w} {how}"), &py, &to_f64(&y));
        }
    }
}

/// The TF tutorial's MNIST CNN front: conv + relu, max-pool, conv + relu, max-pool, flatten.
#[graph]
fn mnist_front(
    x: Tensor<f32, B, 28, 28, 1>,
    k1: Tensor<f32, 3, 3, 1, 4>,
    b1: Tensor<f32, 4>,
    k2: Tensor<f32, 3, 3, 4, 8>,
    b2: Tensor<f32, 8>,
) -> Tensor<f32, B, 200> {
    let h1 = max_pool2d(relu(conv2d(x, k1, 1, VALID) + b1), 2, 2, VALID);
    let h2 = max_pool2d(relu(conv2d(h1, k2, 1, VALID) + b2), 2, 2, VALID);
    reshape(h2, [B, -1])
}

#[test]
fn pooling_after_conv() {
    for b in [1usize, 3] {
        let x = rand_arr(40, Ix4(b, 28, 28, 1), 0.0, 1.0);
        let k1 = rand_arr(41, Ix4(3, 3, 1, 4), -0.5, 0.5);
        let b1 = rand_arr(42, grafo::ndarray::Ix1(4), -0.1, 0.1);
        let k2 = rand_arr(43, Ix4(3, 3, 4, 8), -0.5, 0.5);
        let b2 = rand_arr(44, grafo::ndarray::Ix1(8), -0.1, 0.1);
        let layer = |x: &ArrayD<f64>, k: &ArrayD<f64>, bias: &ArrayD<f64>| {
            let c = ref_conv2d(x, k, 1, false);
            let c = ArrayD::from_shape_fn(c.raw_dim(), |ix| (c[&ix] + bias[[ix[3]]]).max(0.0));
            ref_pool(&c, [2, 2], [2, 2], false, true)
        };
        let h1 = layer(&to_f64(&x), &to_f64(&k1), &to_f64(&b1));
        let h2 = layer(&h1, &to_f64(&k2), &to_f64(&b2));
        let want = reshaped(&h2, &[b, 200]);
        let r = runs_ok!(mnist_front(&x, &k1, &b1, &k2, &b2));
        let eager = to_f64(&r[1].1);
        for (how, got) in &r {
            assert_close(&format!("mnist front b={b} {how}"), got, &want);
            assert_exact(&format!("mnist front b={b} {how} == eager"), got, &eager);
        }
    }
}

#[test]
fn eager_pooling_errors() {
    let x = grafo::ndarray::Array3::<f32>::zeros((2, 3, 4));
    let e = grafo::eager::max_pool2d(&x, [2, 2], [1, 1], VALID).unwrap_err();
    assert!(e.to_string().contains("rank 4"), "{e}");
    let x = grafo::ndarray::Array4::<f32>::zeros((1, 3, 3, 1));
    let e = grafo::eager::avg_pool2d(&x, [5, 2], [1, 1], VALID).unwrap_err();
    assert!(e.to_string().contains("larger than the input"), "{e}");
    let e = grafo::eager::max_pool2d(&x, [2, 2], [0, 1], SAME).unwrap_err();
    assert!(e.to_string().contains("at least 1"), "{e}");
    // TF's VALID size: (3 - 4 + 2) / 2 = 0, an empty output rather than an error.
    let r = grafo::eager::avg_pool2d(&x, [4, 4], [2, 2], VALID).unwrap();
    assert_eq!(r.shape(), &[1, 0, 0, 1]);
    // SAME never fails on size, even with a window larger than the input.
    let r = grafo::eager::max_pool2d(&x, [5, 5], [2, 2], SAME).unwrap();
    assert_eq!(r.shape(), &[1, 2, 2, 1]);
}

// ----- dilated and depthwise convolutions -----------------------------------------------------

/// TF's `conv2d` with dilations / `depthwise_conv2d` written out: the taps `d` apart, the
/// window spanning `(k - 1) * d + 1` for the SAME/VALID rule.
fn ref_conv_general(
    x: &ArrayD<f64>,
    k: &ArrayD<f64>,
    stride: usize,
    d: [usize; 2],
    same: bool,
    depthwise: bool,
) -> ArrayD<f64> {
    let (n, h, w, c) = (x.shape()[0], x.shape()[1], x.shape()[2], x.shape()[3]);
    let (kh, kw, m) = (k.shape()[0], k.shape()[1], k.shape()[3]);
    let axis = |len: usize, k: usize, d: usize| -> (usize, usize) {
        let span = (k - 1) * d + 1;
        if same {
            let out = len.div_ceil(stride);
            let total = ((out.max(1) - 1) * stride + span).saturating_sub(len);
            (out, total / 2)
        } else {
            ((len - span) / stride + 1, 0)
        }
    };
    let ((oh, pt), (ow, pl)) = (axis(h, kh, d[0]), axis(w, kw, d[1]));
    let f = if depthwise { c * m } else { m };
    ArrayD::from_shape_fn(IxDyn(&[n, oh, ow, f]), |ix| {
        let mut acc = 0.0;
        for di in 0..kh {
            for dj in 0..kw {
                let y = (ix[1] * stride + di * d[0]) as isize - pt as isize;
                let xx = (ix[2] * stride + dj * d[1]) as isize - pl as isize;
                if y < 0 || xx < 0 || y as usize >= h || xx as usize >= w {
                    continue;
                }
                let (y, xx) = (y as usize, xx as usize);
                if depthwise {
                    let (ch, mm) = (ix[3] / m, ix[3] % m);
                    acc += x[[ix[0], y, xx, ch]] * k[[di, dj, ch, mm]];
                } else {
                    for ch in 0..c {
                        acc += x[[ix[0], y, xx, ch]] * k[[di, dj, ch, ix[3]]];
                    }
                }
            }
        }
        acc
    })
}

#[graph]
fn convs_general(
    x: Tensor<f32, N, 9, 11, 3>,
    k: Tensor<f32, 3, 2, 3, 4>,
    dk: Tensor<f32, 3, 3, 3, 2>,
    bias: Tensor<f32, 6>,
) -> (
    Tensor<f32, N, 9, 11, 4>,
    Tensor<f32, N, 3, 9, 4>,
    Tensor<f32, N, 5, 6, 4>,
    Tensor<f32, N, 9, 11, 6>,
    Tensor<f32, N, 4, 5, 6>,
    Tensor<f32, N, 5, 7, 6>,
) {
    (
        conv2d(x, k, 1, SAME, 2),
        conv2d(x, k, 1, VALID, [3, 2]),
        conv2d(x, k, 2, SAME, [1, 1, 3, 1]),
        relu(depthwise_conv2d(x, dk, 1, SAME) + bias),
        depthwise_conv2d(x, dk, 2, VALID),
        depthwise_conv2d(x, dk, 1, VALID, 2),
    )
}

#[test]
fn dilated_and_depthwise_conv() {
    for n in [1usize, 2, 0] {
        let x = rand_arr(50 + n as u64, Ix4(n, 9, 11, 3), -1.0, 1.0);
        let k = rand_arr(51, Ix4(3, 2, 3, 4), -1.0, 1.0);
        let dk = rand_arr(52, Ix4(3, 3, 3, 2), -1.0, 1.0);
        let bias = rand_arr(53, grafo::ndarray::Ix1(6), -0.5, 0.5);
        let (xd, kd, dkd, bd) = (to_f64(&x), to_f64(&k), to_f64(&dk), to_f64(&bias));
        let dw = ref_conv_general(&xd, &dkd, 1, [1, 1], true, true);
        let want = [
            ref_conv_general(&xd, &kd, 1, [2, 2], true, false),
            ref_conv_general(&xd, &kd, 1, [3, 2], false, false),
            ref_conv_general(&xd, &kd, 2, [1, 3], true, false),
            ArrayD::from_shape_fn(dw.raw_dim(), |ix| (dw[&ix] + bd[[ix[3]]]).max(0.0)),
            ref_conv_general(&xd, &dkd, 2, [1, 1], false, true),
            ref_conv_general(&xd, &dkd, 1, [2, 2], false, true),
        ];
        let names = [
            "conv d=2 SAME",
            "conv d=[3,2] VALID",
            "conv s=2 d=[1,3] SAME",
            "relu(depthwise SAME + b)",
            "depthwise s=2 VALID",
            "depthwise d=2 VALID",
        ];
        let r = runs_ok!(convs_general(&x, &k, &dk, &bias));
        let eager = &r[1].1;
        for (how, got) in &r {
            let got = [&got.0, &got.1, &got.2, &got.3, &got.4, &got.5];
            let e = [&eager.0, &eager.1, &eager.2, &eager.3, &eager.4, &eager.5];
            for i in 0..6 {
                let what = format!("{} n={n} {how}", names[i]);
                assert_close(&what, got[i], &want[i]);
                assert_exact(&format!("{what} == eager"), got[i], &to_f64(e[i]));
            }
        }
    }
}

#[test]
fn eager_conv_general_errors() {
    let x = grafo::ndarray::Array4::<f32>::zeros((1, 4, 4, 3));
    let k = grafo::ndarray::Array4::<f32>::zeros((3, 3, 2, 1));
    let e = grafo::eager::depthwise_conv2d(&x, &k, 1, SAME, [1, 1]).unwrap_err();
    assert!(e.to_string().contains("channels differ"), "{e}");
    let k = grafo::ndarray::Array4::<f32>::zeros((3, 3, 3, 1));
    let e = grafo::eager::conv2d_dilated(&x, &k, 1, VALID, [2, 2]).unwrap_err();
    assert!(e.to_string().contains("larger than the input"), "{e}");
    let e = grafo::eager::conv2d_dilated(&x, &k, 1, SAME, [0, 1]).unwrap_err();
    assert!(e.to_string().contains("at least 1"), "{e}");
}

// ----- a transformer attention block, as a user writes it -------------------------------------

/// Multi-head self-attention with a symbolic batch, four heads of 16: the heads are split
/// with reshape/transpose, scored with a 4-D matmul against `k` read transposed in place,
/// and merged back through the product dim `B*4` into `[B, 6, 64]`.
#[graph]
fn attention(
    x: Tensor<f32, B, 6, 64>,
    wq: Tensor<f32, 64, 64>,
    wk: Tensor<f32, 64, 64>,
    wv: Tensor<f32, 64, 64>,
) -> Tensor<f32, B, 6, 64> {
    let q = transpose(reshape(matmul(x, wq), [B, 6, 4, 16]), [0, 2, 1, 3]);
    let k = transpose(reshape(matmul(x, wk), [B, 6, 4, 16]), [0, 2, 1, 3]);
    let v = transpose(reshape(matmul(x, wv), [B, 6, 4, 16]), [0, 2, 1, 3]);
    let scores = softmax(matmul(q, transpose(k, [0, 1, 3, 2])) * 0.25, -1);
    let heads = reshape(matmul(scores, v), [B * 4, 6, 16]);
    let merged = transpose(reshape(heads, [B, 4, 6, 16]), [0, 2, 1, 3]);
    reshape(merged, [B, 6, -1])
}

#[test]
fn attention_block() {
    for b in [1usize, 3, 0] {
        let x = rand_arr(60, Ix3(b, 6, 64), -1.0, 1.0);
        let w: Vec<_> = (0..3)
            .map(|i| rand_arr(61 + i, Ix2(64, 64), -0.2, 0.2))
            .collect();
        let xd = to_f64(&x);
        let proj = |w: &grafo::ndarray::Array2<f32>| {
            let p = ref_matmul_nd(&xd, &to_f64(w));
            ref_transpose(&reshaped(&p, &[b, 6, 4, 16]), &[0, 2, 1, 3])
        };
        let (q, k, v) = (proj(&w[0]), proj(&w[1]), proj(&w[2]));
        let s = ref_matmul_nd(&q, &ref_transpose(&k, &[0, 1, 3, 2])).mapv(|v| v * 0.25);
        let s = ref_softmax(&s, 3, false);
        let o = ref_transpose(&ref_matmul_nd(&s, &v), &[0, 2, 1, 3]);
        let want = reshaped(&o, &[b, 6, 64]);
        let r = runs_ok!(attention(&x, &w[0], &w[1], &w[2]));
        let eager = to_f64(&r[1].1);
        for (how, got) in &r {
            assert_close(&format!("attention b={b} {how}"), got, &want);
            assert_exact(&format!("attention b={b} {how} == eager"), got, &eager);
        }
    }
}

/// A `#[graph] mod` callee whose symbol is bound to a product dim at the call (`R` is
/// `B*4`), the layer norm of the heads.
#[graph]
mod heads {
    pub fn row_norm(x: Tensor<f32, R, C>) -> Tensor<f32, R, C> {
        let mean = reduce_mean(x, -1, true);
        x - mean
    }

    pub fn per_head(x: Tensor<f32, B, 4, 8>) -> Tensor<f32, B, 32> {
        let rows = reshape(x, [B * 4, 8]);
        reshape(row_norm(rows), [B, -1])
    }
}

#[test]
fn callee_symbol_bound_to_product_dim() {
    for b in [1usize, 5] {
        let x = rand_arr(70, Ix3(b, 4, 8), -1.0, 1.0);
        let xd = to_f64(&x);
        let mean = xd.mean_axis(grafo::ndarray::Axis(2)).unwrap();
        let want = ArrayD::from_shape_fn(xd.raw_dim(), |ix| xd[&ix] - mean[[ix[0], ix[1]]]);
        let want = reshaped(&want, &[b, 32]);
        for (how, got) in [
            ("compiled", heads::per_head(&x).unwrap()),
            ("eager", heads::per_head::eager(&x).unwrap()),
        ] {
            assert_close(&format!("row_norm of B*4 rows b={b} {how}"), &got, &want);
        }
    }
}
