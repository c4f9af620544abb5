//! The `#[graph]` attribute macro: a thin entry over the pipeline in `expand.rs`.

mod diag;
mod emit;
mod expand;
mod fuse;
mod infer;
mod ir;
mod lower;
mod passes;
mod schedule;
mod signature;
#[cfg(test)]
mod tests;

use proc_macro::TokenStream;

/// Compiles a function over tensors into a fused, statically scheduled graph.
///
/// See LANGUAGE.md for the language: `Tensor<DT, dims...>` parameters, the op table,
/// cond nodes, and the items emitted for `fn NAME` (`NAME`, `NAME::eager`, `NAME::run`,
/// `NAME::graph`).
#[proc_macro_attribute]
pub fn graph(attr: TokenStream, item: TokenStream) -> TokenStream {
    expand::expand(attr.into(), item.into()).into()
}
