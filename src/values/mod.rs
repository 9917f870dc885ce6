//! Layer 2, **values**: value types and small mechanics every layer above shares, importing only
//! the disk layer — exit codes ([`exit_codes`]), the one reporter the library reports its events
//! to ([`reporter`]), shell quoting ([`shell`]) the normalized trajectory of a trial
//! ([`trajectory`]) and the error of an unknown name ([`unknown_name`]).

pub mod exit_codes;
pub(crate) mod reporter;
pub(crate) mod shell;
pub mod trajectory;
pub mod unknown_name;
