//! session: to be written.
