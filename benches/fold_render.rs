//! Criterion bench of fold + render (being written).

fn main() {}
