//! layout: to be written.
