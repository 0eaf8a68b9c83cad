fn main() -> std::process::ExitCode {
    geminid::cli::main()
}
