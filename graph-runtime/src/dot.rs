//! dot: to be written.
