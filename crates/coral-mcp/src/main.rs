//! The `coral` binary: command-line access to a Coral memory (docs/servers.md,
//! "Command-line input"); the commands are in `cli/`.
//!
//! Exit codes: 0 ok, 1 runtime error, 2 usage error (bad arguments or input).

mod cli;

use std::process::ExitCode;

use coral_mcp::errln;

fn main() -> ExitCode {
    // `coral hook` answers a malformed command line too, without blocking its client.
    let cli = cli::hook::parse_cli();
    match cli::run(&cli.command, &cli.globals) {
        Ok(code) => ExitCode::from(code),
        Err(f) => {
            errln!("coral: error: {}", cli::describe(&f.error));
            ExitCode::from(f.code)
        }
    }
}
