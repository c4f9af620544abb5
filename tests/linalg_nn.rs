//! Issue 10's linear-algebra and NN additions through `#[graph]`: product dims in `reshape`
//! (`[B * 4, 64]`, `-1` standing for `B*4`), N-D broadcast `matmul` with operands
//! transposed in place, and pooling; compiled == eager == a naive reference in this file.

mod refs;

use grafo::ndarray::{ArrayD, Ix2, Ix3, Ix4, IxDyn};
use grafo::prelude::*;
use refs::*;

/// The three entry points on the same arguments, labelled.
macro_rules! runs {
    ($f:ident ( $($a:expr),* )) => {
        [
            ("compiled", $f($($a),*).unwrap()),
            ("eager", $f::eager($($a),*).unwrap()),
            ("run", $f::run(&mut Session::default(), $($a),*).unwrap()),
        ]
    };
}

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
        for (how, (r_back, r_flat, r_split, r_sum)) in runs!(merge_heads(&x)) {
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
        for (how, r) in runs!(two_symbols(&x, &y)) {
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
    for (how, r) in runs!(huge_product(&x)) {
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
