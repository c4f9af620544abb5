//! grafo's generated tests (no library code): `build.rs` writes `#[graph]` programs from a
//! fixed seed into `OUT_DIR`, and `tests/` compiles and checks them.
//!
//! - `tests/differential.rs`: random graphs (elementwise, broadcast, reduction, softmax,
//!   select and cond ops over shapes with 1 and odd sizes) run compiled, in a session, eager
//!   and with every pass disabled; all four must agree bit for bit on inputs with NaN, ±inf,
//!   -0 and huge values. `GRAFO_FUZZ_GRAPHS` (default 40) and `GRAFO_FUZZ_SEED` set the budget.
//! - `tests/deep.rs`: a 10,000-deep nested call and 5,000-op chains, which must build.
