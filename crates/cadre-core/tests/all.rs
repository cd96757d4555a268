//! Integration tests of cadre-core, one binary (modules under `suite/`).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod suite;
