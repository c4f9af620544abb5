//! Eager ops: nn (filled in by the kernel work).
