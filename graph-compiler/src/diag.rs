//! Collects every error of an expansion so they are all reported together, with no cascade.

use proc_macro2::Span;
use std::fmt::Display;

/// The errors found so far; phases push to it and carry on where they can.
#[derive(Default)]
pub struct Diagnostics {
    errors: Vec<syn::Error>,
}

impl Diagnostics {
    pub fn error(&mut self, span: Span, message: impl Display) {
        self.errors.push(syn::Error::new(span, message));
    }

    pub fn push(&mut self, error: syn::Error) {
        self.errors.push(error);
    }

    pub fn has_errors(&self) -> bool {
        !self.errors.is_empty()
    }

    /// All errors combined into one, in the order they were found.
    pub fn into_error(self) -> Option<syn::Error> {
        let mut iter = self.errors.into_iter();
        let mut first = iter.next()?;
        for e in iter {
            first.combine(e);
        }
        Some(first)
    }
}
