//! softmax: to be written.
