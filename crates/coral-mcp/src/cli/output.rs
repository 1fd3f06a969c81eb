//! What commands print: `outln!` / `out!` (a closed stdout ends the process quietly),
//! `print_json` (escaped like every JSON Coral shows) and progress bars on stderr.

use coral_mcp::errln;

/// `println!` that ends the process quietly when stdout is closed (`coral export | head`)
/// instead of panicking.
macro_rules! outln {
    ($($arg:tt)*) => {
        $crate::cli::output::write_out(format_args!("{}\n", format_args!($($arg)*)))
    };
}

/// `print!` with the same behaviour as [`outln!`].
macro_rules! out {
    ($($arg:tt)*) => {
        $crate::cli::output::write_out(format_args!($($arg)*))
    };
}

/// Write to stdout; a closed pipe ends the process with success, like other Unix tools.
pub(crate) fn write_out(args: std::fmt::Arguments<'_>) {
    use std::io::Write;
    let mut stdout = std::io::stdout().lock();
    if let Err(e) = stdout.write_fmt(args).and_then(|()| stdout.flush()) {
        if e.kind() == std::io::ErrorKind::BrokenPipe {
            std::process::exit(0);
        }
        errln!("coral: error: cannot write output: {e}");
        std::process::exit(1);
    }
}

/// Print `value` as pretty JSON, escaped for a terminal.
pub(crate) fn print_json(value: &serde_json::Value) {
    // Escaped like every JSON Coral shows: stored text cannot move a terminal's cursor or
    // start a line (C1 controls, LS, PS).
    outln!(
        "{}",
        coral::json_for_model(&serde_json::to_string_pretty(value).unwrap_or_default())
    );
}

/// A progress bar drawn with `template` on stderr, hidden when `quiet`.
pub(crate) fn progress_bar(quiet: bool, len: u64, template: &str) -> indicatif::ProgressBar {
    let bar = indicatif::ProgressBar::new(len);
    bar.set_style(
        indicatif::ProgressStyle::with_template(template)
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
    );
    if quiet {
        bar.set_draw_target(indicatif::ProgressDrawTarget::hidden());
    }
    bar
}
