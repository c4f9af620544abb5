//! reduce: to be written.
