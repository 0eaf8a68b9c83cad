//! The gemctl binary, built inside the test package (see geminid-it.rs).
fn main() -> std::process::ExitCode {
    gemctl::cli::main()
}
