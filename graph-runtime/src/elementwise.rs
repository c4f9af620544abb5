//! elementwise: to be written.
