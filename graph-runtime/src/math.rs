//! math: to be written.
