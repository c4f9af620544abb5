//! Every code example of the two seed tutorials (shared/seeds/, Spanish) as a `#[graph]`
//! function: the Session tutorial's constants, fetches, placeholders, pow, ConfigProto
//! threads, TensorBoard and `tf.debugging.assert_*`; the eager tutorial's conv networks.

mod refs;

use grafo::prelude::*;
use refs::{assert_close, assert_close_tol, rand_arr, ref_conv2d, ref_norm, to_f64, zip2};

fn threaded() -> Session {
    Session::new(SessionConfig {
        intra_op_threads: 2,
        ..Default::default()
    })
    .unwrap()
}

// `@tf.function def simple_add(a, b): return a + b` with tf.constant(2), tf.constant(3).
#[graph]
fn simple_add(a: Tensor<i32>, b: Tensor<i32>) -> Tensor<i32> {
    a + b
}

#[test]
fn seed_simple_add() {
    let (a, b) = (arr0(2), arr0(3));
    assert_eq!(simple_add(&a, &b).unwrap(), arr0(5));
    assert_eq!(simple_add::eager(&a, &b).unwrap(), arr0(5));
    assert_eq!(
        simple_add::run(&mut Session::default(), &a, &b).unwrap(),
        arr0(5)
    );
    assert_eq!(simple_add::run(&mut threaded(), &a, &b).unwrap(), arr0(5));
}

// a = tf.constant(5); b = tf.constant(3); suma = tf.add(a, b); sess.run(suma) -> 8
#[graph]
fn suma() -> Tensor<i32> {
    let a = constant(5);
    let b = constant(3);
    a + b
}

// The `with` block example: constants 10 and 20 -> 30.
#[graph]
fn suma_with() -> Tensor<i32> {
    let a = constant(10);
    let b = constant(20);
    a + b
}

#[test]
fn seed_constant_sum() {
    assert_eq!(suma().unwrap(), arr0(8));
    assert_eq!(suma::eager().unwrap(), arr0(8));
    {
        // `with tf.compat.v1.Session() as sess:` is a scope: the session is dropped at its end.
        let mut sess = Session::default();
        assert_eq!(suma::run(&mut sess).unwrap(), arr0(8));
        assert_eq!(suma::run(&mut sess).unwrap(), arr0(8));
    }
    assert_eq!(suma::run(&mut threaded()).unwrap(), arr0(8));
    assert_eq!(suma_with().unwrap(), arr0(30));
    assert_eq!(suma_with::eager().unwrap(), arr0(30));
    assert_eq!(suma_with::run(&mut Session::default()).unwrap(), arr0(30));
}

// x = tf.constant(2); y = tf.constant(4); sess.run([producto, division])
#[graph]
fn producto_division_i32() -> (Tensor<i32>, Tensor<i32>) {
    let x = constant(2);
    let y = constant(4);
    let producto = x * y;
    let division = y / x;
    (producto, division)
}

#[graph]
fn producto_division_f32() -> (Tensor<f32>, Tensor<f32>) {
    let x = constant(2.0);
    let y = constant(4.0);
    (x * y, y / x)
}

// TensorFlow's tf.divide on ints is true division; in grafo that is an explicit cast.
#[graph]
fn producto_division_true() -> (Tensor<i32>, Tensor<f64>) {
    let x = constant(2);
    let y = constant(4);
    (x * y, cast::<f64>(y) / cast::<f64>(x))
}

// Integer division with non-constant operands (Rust semantics: truncation toward zero).
#[graph]
fn fetch_two_i32(x: Tensor<i32>, y: Tensor<i32>) -> (Tensor<i32>, Tensor<i32>) {
    (x * y, y / x)
}

#[graph]
fn fetch_two_f32(x: Tensor<f32>, y: Tensor<f32>) -> (Tensor<f32>, Tensor<f32>) {
    (x * y, y / x)
}

#[test]
fn seed_two_fetches() {
    assert_eq!(producto_division_i32().unwrap(), (arr0(8), arr0(2)));
    assert_eq!(producto_division_i32::eager().unwrap(), (arr0(8), arr0(2)));
    assert_eq!(
        producto_division_i32::run(&mut Session::default()).unwrap(),
        (arr0(8), arr0(2))
    );
    assert_eq!(producto_division_f32().unwrap(), (arr0(8.0), arr0(2.0)));
    assert_eq!(
        producto_division_f32::eager().unwrap(),
        (arr0(8.0), arr0(2.0))
    );
    assert_eq!(
        producto_division_f32::run(&mut threaded()).unwrap(),
        (arr0(8.0), arr0(2.0))
    );
    assert_eq!(producto_division_true().unwrap(), (arr0(8), arr0(2.0)));
    assert_eq!(
        producto_division_true::eager().unwrap(),
        (arr0(8), arr0(2.0))
    );

    assert_eq!(
        fetch_two_i32(&arr0(2), &arr0(4)).unwrap(),
        (arr0(8), arr0(2))
    );
    assert_eq!(
        fetch_two_i32::eager(&arr0(2), &arr0(4)).unwrap(),
        (arr0(8), arr0(2))
    );
    assert_eq!(
        fetch_two_i32::run(&mut Session::default(), &arr0(2), &arr0(4)).unwrap(),
        (arr0(8), arr0(2))
    );
    // 7 / 2 == 3 and -7 / 2 == -3 as in Rust.
    assert_eq!(
        fetch_two_i32(&arr0(2), &arr0(7)).unwrap(),
        (arr0(14), arr0(3))
    );
    assert_eq!(
        fetch_two_i32(&arr0(2), &arr0(-7)).unwrap(),
        (arr0(-14), arr0(-3))
    );
    assert_eq!(
        fetch_two_i32::eager(&arr0(2), &arr0(-7)).unwrap(),
        (arr0(-14), arr0(-3))
    );
    assert_eq!(
        fetch_two_f32(&arr0(2.0), &arr0(4.0)).unwrap(),
        (arr0(8.0), arr0(2.0))
    );
    assert_eq!(
        fetch_two_f32::eager(&arr0(2.0), &arr0(4.0)).unwrap(),
        (arr0(8.0), arr0(2.0))
    );
    assert_eq!(
        fetch_two_f32::run(&mut threaded(), &arr0(2.0), &arr0(4.0)).unwrap(),
        (arr0(8.0), arr0(2.0))
    );
    assert_eq!(
        fetch_two_f32(&arr0(2.0), &arr0(7.0)).unwrap(),
        (arr0(14.0), arr0(3.5))
    );
}

// Placeholders and feed_dict: a, b = placeholder(tf.float32); sess.run(suma, {a: 10.5, b: 4.5}).
#[graph]
fn suma_placeholders(a: Tensor<f32>, b: Tensor<f32>) -> Tensor<f32> {
    a + b
}

#[test]
fn seed_placeholders() {
    let mut sess = Session::default();
    for (a, b, want) in [(10.5f32, 4.5f32, 15.0f32), (12.5, 7.5, 20.0)] {
        let (a, b) = (arr0(a), arr0(b));
        assert_eq!(suma_placeholders(&a, &b).unwrap(), arr0(want));
        assert_eq!(suma_placeholders::eager(&a, &b).unwrap(), arr0(want));
        assert_eq!(
            suma_placeholders::run(&mut sess, &a, &b).unwrap(),
            arr0(want)
        );
        assert_eq!(
            suma_placeholders::run(&mut sess, a.view(), b.view()).unwrap(),
            arr0(want)
        );
        assert_eq!(
            suma_placeholders::run(&mut threaded(), &a, &b).unwrap(),
            arr0(want)
        );
    }
}

// c = tf.constant(7); d = tf.constant(2); potencia = tf.pow(c, d) -> 49
#[graph]
fn potencia() -> Tensor<i32> {
    let c = constant(7);
    let d = constant(2);
    pow(c, d)
}

#[graph]
fn potencia_f32() -> Tensor<f32> {
    pow(constant(7.0), constant(2.0))
}

#[graph]
fn potencia_fed(c: Tensor<i32>, d: Tensor<i32>) -> Tensor<i32> {
    pow(c, d)
}

#[graph]
fn potencia_fed_i64(c: Tensor<i64>, d: Tensor<i64>) -> Tensor<i64> {
    pow(c, d)
}

#[graph]
fn potencia_fed_f32(c: Tensor<f32>, d: Tensor<f32>) -> Tensor<f32> {
    pow(c, d)
}

#[test]
fn seed_pow() {
    assert_eq!(potencia().unwrap(), arr0(49));
    assert_eq!(potencia::eager().unwrap(), arr0(49));
    assert_eq!(potencia::run(&mut Session::default()).unwrap(), arr0(49));
    assert_eq!(potencia_fed(&arr0(7), &arr0(2)).unwrap(), arr0(49));
    assert_eq!(potencia_fed::eager(&arr0(7), &arr0(2)).unwrap(), arr0(49));
    assert_eq!(
        potencia_fed::run(&mut Session::default(), &arr0(7), &arr0(2)).unwrap(),
        arr0(49)
    );
    assert_eq!(potencia_fed(&arr0(3), &arr0(4)).unwrap(), arr0(81));
    assert_eq!(
        potencia_fed::eager(&arr0(2), &arr0(10)).unwrap(),
        arr0(1024)
    );
    assert_eq!(potencia_f32().unwrap(), arr0(49.0));
    assert_eq!(potencia_f32::eager().unwrap(), arr0(49.0));
    assert_eq!(potencia_fed_i64(&arr0(7), &arr0(2)).unwrap(), arr0(49));
    assert_eq!(
        potencia_fed_i64::eager(&arr0(7), &arr0(2)).unwrap(),
        arr0(49)
    );
    assert_eq!(
        potencia_fed_i64::run(&mut threaded(), &arr0(7), &arr0(2)).unwrap(),
        arr0(49)
    );
    assert_eq!(
        potencia_fed_f32(&arr0(7.0), &arr0(2.0)).unwrap(),
        arr0(49.0)
    );
    assert_eq!(
        potencia_fed_f32::eager(&arr0(7.0), &arr0(2.0)).unwrap(),
        arr0(49.0)
    );
}

// ConfigProto(intra_op_parallelism_threads=2): producto of 5 and 3 -> 15.
#[graph]
fn producto_config() -> Tensor<i32> {
    let x = constant(5);
    let y = constant(3);
    x * y
}

#[test]
fn seed_config_threads() {
    let mut sess = threaded();
    assert_eq!(sess.threads(), 2);
    assert_eq!(producto_config::run(&mut sess).unwrap(), arr0(15));
    assert_eq!(producto_config().unwrap(), arr0(15));
    assert_eq!(producto_config::eager().unwrap(), arr0(15));
}

// TensorBoard: c = tf.add(a, b) of constants 2 and 3, the graph exported for TensorBoard.
#[graph]
fn ejecutar_suma() -> Tensor<i32> {
    let a = constant(2);
    let b = constant(3);
    let c = a + b;
    c
}

#[test]
fn seed_tensorboard() {
    assert_eq!(ejecutar_suma().unwrap(), arr0(5));
    assert_eq!(ejecutar_suma::eager().unwrap(), arr0(5));
    let g = ejecutar_suma::graph();
    assert_eq!(g.name, "ejecutar_suma");
    let dot = g.to_dot();
    assert!(dot.contains("digraph"), "{dot}");
    let dir = std::env::temp_dir().join(format!("grafo-seeds-tb-{}", std::process::id()));
    let path = g.write_tensorboard(&dir).unwrap();
    assert!(std::fs::metadata(&path).unwrap().len() > 0);
    let _ = std::fs::remove_dir_all(&dir);
}

// tf.debugging: dividir(a, b) with assert_non_negative / assert_greater.
#[graph]
fn dividir(a: Tensor<f32>, b: Tensor<f32>) -> Tensor<f32> {
    assert_non_negative(a, "El dividendo debe ser no negativo.");
    assert_non_negative(b, "El divisor debe ser no negativo.");
    assert_greater(b, 0.0, "El divisor debe ser mayor que cero.");
    a / b
}

fn assertion_message(r: Result<Array0<f32>, grafo::Error>) -> String {
    match r {
        Err(grafo::Error::Assertion { message, .. }) => message,
        other => panic!("expected Error::Assertion, got {other:?}"),
    }
}

#[test]
fn seed_dividir() {
    let (ten, two, zero, neg) = (arr0(10.0f32), arr0(2.0f32), arr0(0.0f32), arr0(-1.0f32));
    assert_eq!(dividir(&ten, &two).unwrap(), arr0(5.0));
    assert_eq!(dividir::eager(&ten, &two).unwrap(), arr0(5.0));
    assert_eq!(
        dividir::run(&mut Session::default(), &ten, &two).unwrap(),
        arr0(5.0)
    );
    assert_eq!(
        dividir::run(&mut threaded(), &ten, &two).unwrap(),
        arr0(5.0)
    );

    let greater = "El divisor debe ser mayor que cero.";
    assert!(assertion_message(dividir(&ten, &zero)).contains(greater));
    assert!(assertion_message(dividir::eager(&ten, &zero)).contains(greater));
    assert!(
        assertion_message(dividir::run(&mut Session::default(), &ten, &zero)).contains(greater)
    );
    assert!(assertion_message(dividir::run(&mut threaded(), &ten, &zero)).contains(greater));

    let dividendo = "El dividendo debe ser no negativo.";
    assert!(assertion_message(dividir(&neg, &two)).contains(dividendo));
    assert!(assertion_message(dividir::eager(&neg, &two)).contains(dividendo));
    let divisor = "El divisor debe ser no negativo.";
    assert!(assertion_message(dividir(&ten, &neg)).contains(divisor));
    assert!(assertion_message(dividir::eager(&ten, &neg)).contains(divisor));

    // A session stays usable after a failed assertion.
    let mut s = Session::default();
    assert!(dividir::run(&mut s, &ten, &zero).is_err());
    assert_eq!(dividir::run(&mut s, &ten, &two).unwrap(), arr0(5.0));
}

#[test]
fn seed_dividir_error_carries_op_and_line() {
    match dividir(&arr0(10.0), &arr0(0.0)) {
        Err(grafo::Error::Assertion { op, message, line }) => {
            assert!(op.contains("greater"), "op {op}");
            assert_eq!(message, "El divisor debe ser mayor que cero.");
            assert!(line > 0, "line {line}");
            let shown = grafo::Error::Assertion {
                op,
                message: message.clone(),
                line,
            }
            .to_string();
            assert!(shown.contains(&message), "{shown}");
        }
        other => panic!("{other:?}"),
    }
}

// The eager tutorial: `red(entrada)`, two Conv2D(16, 3) layers (Keras' default VALID padding).
#[graph]
fn red(
    entrada: Tensor<f32, B, 16, 16, 3>,
    k0: Tensor<f32, 3, 3, 3, 16>,
    b0: Tensor<f32, 16>,
    k1: Tensor<f32, 3, 3, 16, 16>,
    b1: Tensor<f32, 16>,
) -> Tensor<f32, B, 12, 12, 16> {
    let salida = bias_add(conv2d(entrada, k0, 1, VALID), b0);
    let salida = bias_add(conv2d(salida, k1, 1, VALID), b1);
    salida
}

// ... and the dynamic one: the second layer only when the L2 norm is below 1000 (SAME padding,
// so that both arms have one shape), with the norm written as in the tutorial.
#[graph]
fn red_dinamica(
    entrada: Tensor<f32, B, 16, 16, 3>,
    k0: Tensor<f32, 3, 3, 3, 16>,
    b0: Tensor<f32, 16>,
    k1: Tensor<f32, 3, 3, 16, 16>,
    b1: Tensor<f32, 16>,
) -> Tensor<f32, B, 16, 16, 16> {
    let mut salida = bias_add(conv2d(entrada, k0, 1, SAME), b0);
    let norma_l2 = sqrt(reduce_sum(square(salida)));
    if norma_l2 < 1000.0 {
        salida = bias_add(conv2d(salida, k1, 1, SAME), b1);
    }
    salida
}

fn conv_ref(
    x: &grafo::ndarray::ArrayD<f64>,
    k: &Array4<f32>,
    b: &Array1<f32>,
    same: bool,
) -> grafo::ndarray::ArrayD<f64> {
    zip2(&ref_conv2d(x, &to_f64(k), 1, same), &to_f64(b), |a, b| {
        a + b
    })
}

#[test]
fn seed_red_two_convs() {
    let k0 = rand_arr(1, grafo::ndarray::Ix4(3, 3, 3, 16), -0.3, 0.3);
    let b0 = rand_arr(2, grafo::ndarray::Ix1(16), -0.1, 0.1);
    let k1 = rand_arr(3, grafo::ndarray::Ix4(3, 3, 16, 16), -0.2, 0.2);
    let b1 = rand_arr(4, grafo::ndarray::Ix1(16), -0.1, 0.1);
    // datos = np.ones((1, H, W, 3)), and a random batch of 2.
    let inputs = [
        Array4::<f32>::ones((1, 16, 16, 3)),
        rand_arr(5, grafo::ndarray::Ix4(2, 16, 16, 3), 0.0, 1.0),
    ];
    for x in &inputs {
        let want = conv_ref(&conv_ref(&to_f64(x), &k0, &b0, false), &k1, &b1, false);
        assert_close("red compiled", &red(x, &k0, &b0, &k1, &b1).unwrap(), &want);
        assert_close(
            "red eager",
            &red::eager(x, &k0, &b0, &k1, &b1).unwrap(),
            &want,
        );
        assert_close(
            "red session",
            &red::run(&mut threaded(), x, &k0, &b0, &k1, &b1).unwrap(),
            &want,
        );
    }
}

#[test]
fn seed_red_dinamica_both_arms() {
    let k0 = rand_arr(1, grafo::ndarray::Ix4(3, 3, 3, 16), -0.3, 0.3);
    let b0 = rand_arr(2, grafo::ndarray::Ix1(16), -0.1, 0.1);
    let k1 = rand_arr(3, grafo::ndarray::Ix4(3, 3, 16, 16), -0.2, 0.2);
    let b1 = rand_arr(4, grafo::ndarray::Ix1(16), -0.1, 0.1);
    // Small inputs: norm < 1000, second layer runs. Large inputs (x 100): norm > 1000, skipped.
    for (scale, second) in [(1.0f32, true), (100.0, false)] {
        let x = rand_arr(6, grafo::ndarray::Ix4(1, 16, 16, 3), 0.0, 1.0).mapv(|v| v * scale);
        let y0 = conv_ref(&to_f64(&x), &k0, &b0, true);
        assert_eq!(
            ref_norm(&y0) < 1000.0,
            second,
            "test input picks the intended arm"
        );
        let want = if second {
            conv_ref(&y0, &k1, &b1, true)
        } else {
            y0
        };
        let what = format!("red_dinamica scale {scale}");
        // Absolute tolerance scales with the inputs (f32 sums of terms of size ~scale).
        let atol = 1e-5 * scale as f64;
        assert_close_tol(
            &format!("{what} compiled"),
            &red_dinamica(&x, &k0, &b0, &k1, &b1).unwrap(),
            &want,
            1e-4,
            atol,
        );
        assert_close_tol(
            &format!("{what} eager"),
            &red_dinamica::eager(&x, &k0, &b0, &k1, &b1).unwrap(),
            &want,
            1e-4,
            atol,
        );
        assert_close_tol(
            &format!("{what} session"),
            &red_dinamica::run(&mut Session::default(), &x, &k0, &b0, &k1, &b1).unwrap(),
            &want,
            1e-4,
            atol,
        );
    }
    assert_eq!(red_dinamica::graph().conds.len(), 1);
}

// The tutorial writes `assert_greater(b, 0, ...)`: an integer literal takes the f32 dtype of `b`.
#[graph]
fn dividir_literal_cero(a: Tensor<f32>, b: Tensor<f32>) -> Tensor<f32> {
    assert_greater(b, 0, "El divisor debe ser mayor que cero.");
    a / b
}

#[test]
fn seed_dividir_integer_literal() {
    assert_eq!(
        dividir_literal_cero(&arr0(10.0), &arr0(2.0)).unwrap(),
        arr0(5.0)
    );
    assert_eq!(
        dividir_literal_cero::eager(&arr0(10.0), &arr0(2.0)).unwrap(),
        arr0(5.0)
    );
    let m = assertion_message(dividir_literal_cero(&arr0(10.0), &arr0(0.0)));
    assert!(m.contains("mayor que cero"), "{m}");
    let m = assertion_message(dividir_literal_cero::eager(&arr0(10.0), &arr0(0.0)));
    assert!(m.contains("mayor que cero"), "{m}");
}
