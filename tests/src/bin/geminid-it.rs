//! The daemon binary, built inside the test package so that integration
//! tests can find it through `CARGO_BIN_EXE_geminid-it`.
fn main() -> std::process::ExitCode {
    geminid::cli::main()
}
