//! tensorboard: to be written.
