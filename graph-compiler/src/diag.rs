//! Collects every error of an expansion so they are all reported together, with no cascade.

use crate::ir::SpanRange;
use proc_macro2::{Punct, Spacing, TokenStream, TokenTree};
use std::fmt::Display;

/// The errors found so far; phases push to it and carry on where they can.
#[derive(Default)]
pub struct Diagnostics {
    errors: Vec<syn::Error>,
    failed_elsewhere: bool,
}

impl Diagnostics {
    /// An error over the source range `span` (a `Span` or a [`SpanRange`]).
    pub fn error(&mut self, span: impl Into<SpanRange>, message: impl Display) {
        let range: SpanRange = span.into();
        let mut first = Punct::new('#', Spacing::Alone);
        first.set_span(range.start);
        let mut last = Punct::new('#', Spacing::Alone);
        last.set_span(range.end);
        let tokens: TokenStream = [TokenTree::Punct(first), TokenTree::Punct(last)]
            .into_iter()
            .collect();
        self.errors.push(syn::Error::new_spanned(tokens, message));
    }

    pub fn push(&mut self, error: syn::Error) {
        self.errors.push(error);
    }

    pub fn has_errors(&self) -> bool {
        !self.errors.is_empty() || self.failed_elsewhere
    }

    /// Marks the expansion failed by an error another expansion reports (a callee's), so
    /// this one emits its stub without a second message.
    pub fn fail_quietly(&mut self) {
        self.failed_elsewhere = true;
    }

    /// How many errors were reported so far.
    pub fn len(&self) -> usize {
        self.errors.len()
    }

    /// Takes back the errors reported since there were `mark` of them.
    pub fn split_off(&mut self, mark: usize) -> Vec<syn::Error> {
        self.errors.split_off(mark)
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
