//! The debugging tutorial's `dividir`: run-time checks (`tf.debugging.assert_*`) that return `Err(grafo::Error::Assertion { .. })` instead of a wrong answer.
//!
//! `cargo run --release --example seed_debugging`

use grafo::prelude::*;

#[graph]
fn dividir(a: Tensor<f32>, b: Tensor<f32>) -> Tensor<f32> {
    assert_non_negative(a, "El dividendo debe ser no negativo.");
    assert_non_negative(b, "El divisor debe ser no negativo.");
    assert_greater(b, 0.0, "El divisor debe ser mayor que cero.");
    a / b
}

fn main() {
    let r = dividir(&arr0(10.0), &arr0(2.0)).expect("10 / 2 passes every check");
    println!("Resultado de la división: {}", r[()]);
    assert_eq!(r[()], 5.0);

    // A divisor of zero trips `assert_greater`: an error value, not a panic nor an inf.
    match dividir(&arr0(10.0), &arr0(0.0)) {
        Err(e @ grafo::Error::Assertion { .. }) => {
            println!("dividir(10.0, 0.0) -> Err: {e}");
            if let grafo::Error::Assertion { op, message, .. } = &e {
                assert_eq!(*op, "assert_greater");
                assert_eq!(message, "El divisor debe ser mayor que cero.");
            }
        }
        other => panic!("expected an assertion error, got {other:?}"),
    }

    // A negative dividend trips the first check; the eager path reports the same error.
    let compiled = dividir(&arr0(-1.0), &arr0(2.0));
    let eager = dividir::eager(&arr0(-1.0), &arr0(2.0));
    println!("dividir(-1.0, 2.0) -> {compiled:?}");
    assert!(matches!(
        compiled,
        Err(grafo::Error::Assertion {
            op: "assert_non_negative",
            ..
        })
    ));
    assert!(matches!(
        eager,
        Err(grafo::Error::Assertion {
            op: "assert_non_negative",
            ..
        })
    ));
}
