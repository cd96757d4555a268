//! The `cadre` binary.

fn main() {
    println!("cadre {}", env!("CARGO_PKG_VERSION"));
}
