//! Eager ops: linalg (filled in by the kernel work).
