//! parallel: to be written.
