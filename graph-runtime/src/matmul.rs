//! matmul: to be written.
