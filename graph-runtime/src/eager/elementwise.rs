//! Eager ops: elementwise (filled in by the kernel work).
