fn main() -> std::process::ExitCode {
    gemctl::cli::main()
}
