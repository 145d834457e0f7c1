//! `revtx-book serve`: live preview on 127.0.0.1.
use revtx_book::book::BuildOptions;
use std::process::ExitCode;

pub fn serve(_opts: BuildOptions, _port: u16) -> ExitCode {
    eprintln!("serve: not built yet");
    ExitCode::FAILURE
}
