//! Eager ops: reduce (filled in by the kernel work).
