//! Wire tests of `HttpProvider` against the scripted fake server, for both formats (R1, R3, Z2).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod abort;
mod deadlines;
mod faults;
mod raw;
mod replies;
mod responses;
mod support;
