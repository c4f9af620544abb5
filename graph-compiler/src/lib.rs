//! grafo's graph compiler: the pipeline behind `#[graph]`, one module per phase (see `expand.rs`).
//!
//! It takes and returns `proc_macro2::TokenStream`, so tests and benches drive it without
//! rustc; the `graph-macro` crate is a one-line entry over [`expand`].

mod diag;
mod emit;
mod expand;
mod fuse;
mod infer;
mod ir;
mod lower;
pub mod ops;
mod passes;
mod schedule;
mod signature;
mod structs;
#[cfg(test)]
mod tests;

pub use expand::expand;
