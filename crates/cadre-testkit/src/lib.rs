//! A fake model server for tests, benchmarks and `cadre demo`.
