//! Every snippet of the Session tutorial (TF1's `tf.compat.v1.Session`), line by line in grafo.
//!
//! `cargo run --release --example seed_session`

use grafo::prelude::*;

/// `suma = tf.add(constant(5), constant(3))`: folded to one constant 8 at compile time.
#[graph]
fn suma_constantes() -> Tensor<i32> {
    constant(5) + constant(3)
}

/// `a + b` on two int32 scalars (the W5 graph).
#[graph]
fn suma(a: Tensor<i32>, b: Tensor<i32>) -> Tensor<i32> {
    a + b
}

/// `sess.run([producto, division])`: two fetches from one run.
#[graph]
fn producto_y_division(x: Tensor<f32>, y: Tensor<f32>) -> (Tensor<f32>, Tensor<f32>) {
    (x * y, y / x)
}

/// `a`, `b` placeholders fed through `feed_dict`: graph parameters fed at the call.
#[graph]
fn suma_placeholders(a: Tensor<f32>, b: Tensor<f32>) -> Tensor<f32> {
    a + b
}

/// `tf.pow(constant(7), constant(2))`.
#[graph]
fn potencia() -> Tensor<f32> {
    pow(constant(7.0), constant(2.0))
}

/// `tf.multiply(constant(5), constant(3))`, run in a session with 2 intra-op threads.
#[graph]
fn producto() -> Tensor<i32> {
    constant(5) * constant(3)
}

fn main() -> Result<(), grafo::Error> {
    // `with tf.compat.v1.Session() as sess:` -- dropping the session frees everything.
    {
        let mut sess = Session::default();
        let r = suma_constantes::run(&mut sess)?;
        println!("sess.run(suma) = {}", r[()]);
        assert_eq!(r[()], 8);

        let r = suma::run(&mut sess, &arr0(5), &arr0(3))?;
        println!("suma(5, 3) = {}", r[()]);
        assert_eq!(r[()], 8);

        let (p, d) = producto_y_division::run(&mut sess, &arr0(2.0), &arr0(4.0))?;
        println!("Producto: {}", p[()]);
        println!("División: {}", d[()]);
        assert_eq!((p[()], d[()]), (8.0, 2.0));

        let r = suma_placeholders::run(&mut sess, &arr0(10.5), &arr0(4.5))?;
        println!("El resultado de la suma es: {}", r[()]);
        assert_eq!(r[()], 15.0);
        let r = suma_placeholders::run(&mut sess, &arr0(12.5), &arr0(7.5))?;
        println!("El resultado de la suma es: {}", r[()]);
        assert_eq!(r[()], 20.0);

        let r = potencia::run(&mut sess)?;
        println!("El resultado de la potencia es: {}", r[()]);
        assert_eq!(r[()], 49.0);
    }

    // `ConfigProto(intra_op_parallelism_threads=2, inter_op_parallelism_threads=2)`.
    let mut sess = Session::new(SessionConfig {
        intra_op_threads: 2,
        inter_op_threads: 2,
        profile: false,
    })?;
    assert_eq!(sess.threads(), 2);
    let r = producto::run(&mut sess)?;
    println!(
        "El resultado del producto es: {} (session with {} intra-op threads)",
        r[()],
        sess.threads()
    );
    assert_eq!(r[()], 15);

    // Without a session: a compiled graph is also a plain function.
    assert_eq!(suma(&arr0(5), &arr0(3))?[()], 8);
    Ok(())
}
