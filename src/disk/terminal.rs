//! The one writer of the terminal: every line skill-lift prints on stdout or stderr (results,
//! warnings, progress lines, pre-flight and circuit-breaker messages, the error chain of a
//! failed command) passes the redaction boundary ([`crate::disk::redact::redact_text`]) here, so a
//! server's error body that echoes an `Authorization` header, or a profile's key value in any
//! shape, never reaches a job log.
//!
//! Code prints with [`crate::outln!`] / [`crate::out!`] (stdout) and [`crate::errln!`] /
//! [`crate::errout!`] (stderr), which take `format!` arguments. The standard `println!`,
//! `eprintln!`, `print!` and `eprint!` are refused by clippy (`disallowed-macros` in
//! `clippy.toml`), so a new message cannot bypass the boundary by accident. Files are written by
//! the rest of this layer ([`crate::disk`]), also redacting.
//!
//! This module must not decide what is printed or when; it only guarantees how.

// The disk module allows the file-writing methods for itself; the terminal writes no files.
#![warn(clippy::disallowed_methods)]

use std::io::Write;

/// Which standard stream a text goes to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Stream {
    /// Standard output: the command's result (tables, JSON, markdown).
    Stdout,
    /// Standard error: progress, warnings, errors.
    Stderr,
}

/// Write `text` (already formatted) to `stream` through the redaction boundary, with a newline
/// when `newline` is set. Write errors are ignored as the print macros' callers expect (a
/// closed pipe ends the process through SIGPIPE; see `main.rs`).
pub(crate) fn write_text(stream: Stream, text: &str, newline: bool) {
    let redacted = crate::disk::redact::redact_text(text);
    let mut bytes = Vec::with_capacity(redacted.len() + 1);
    bytes.extend_from_slice(redacted.as_bytes());
    if newline {
        bytes.push(b'\n');
    }
    // One write of the whole text under the stream's lock: lines of threads printing at once
    // (progress lines, matrix cells) never interleave inside a line.
    let _ = match stream {
        Stream::Stdout => {
            let mut out = std::io::stdout().lock();
            out.write_all(&bytes).and_then(|()| out.flush())
        }
        Stream::Stderr => std::io::stderr().lock().write_all(&bytes),
    };
}

/// [`write_text`] of formatted arguments (what the macros call).
pub(crate) fn write_fmt(stream: Stream, args: std::fmt::Arguments<'_>, newline: bool) {
    match args.as_str() {
        Some(text) => write_text(stream, text, newline),
        None => write_text(stream, &args.to_string(), newline),
    }
}

/// `println!` through the redaction boundary ([`crate::disk::terminal`]).
#[macro_export]
macro_rules! outln {
    () => {
        $crate::disk::terminal::write_text($crate::disk::terminal::Stream::Stdout, "", true)
    };
    ($($arg:tt)*) => {
        $crate::disk::terminal::write_fmt($crate::disk::terminal::Stream::Stdout, format_args!($($arg)*), true)
    };
}

/// `print!` through the redaction boundary ([`crate::disk::terminal`]).
#[macro_export]
macro_rules! out {
    ($($arg:tt)*) => {
        $crate::disk::terminal::write_fmt($crate::disk::terminal::Stream::Stdout, format_args!($($arg)*), false)
    };
}

/// `eprintln!` through the redaction boundary ([`crate::disk::terminal`]).
#[macro_export]
macro_rules! errln {
    () => {
        $crate::disk::terminal::write_text($crate::disk::terminal::Stream::Stderr, "", true)
    };
    ($($arg:tt)*) => {
        $crate::disk::terminal::write_fmt($crate::disk::terminal::Stream::Stderr, format_args!($($arg)*), true)
    };
}

/// `eprint!` through the redaction boundary ([`crate::disk::terminal`]).
#[macro_export]
macro_rules! errout {
    ($($arg:tt)*) => {
        $crate::disk::terminal::write_fmt($crate::disk::terminal::Stream::Stderr, format_args!($($arg)*), false)
    };
}
