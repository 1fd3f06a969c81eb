//! The rules every Coral crate shares, in one home so they cannot drift apart: text folding
//! and CJK classes ([`normalize`], [`is_cjk`], [`fold_term`]), set Jaccard
//! ([`set_jaccard_sorted`]), quoting text for a model ([`push_quoted`], [`one_line`]), bounded
//! echoes of values in errors ([`echo`]), process liveness ([`liveness::check`]), I/O errors
//! that name their file ([`IoContext`]), the names of JSON kinds ([`kind_name`]), the journals'
//! checksummed line frame ([`frame`]) and when journal appends reach the disk ([`SyncPolicy`],
//! [`Syncer`]).
//!
//! It sits at the bottom of the crate graph: every other Coral crate may use it, it uses none.
//!
//! ```
//! use coral_base::{fold_term, normalize, push_quoted, set_jaccard_sorted};
//!
//! assert_eq!(normalize("Ｌatte"), "latte");
//! assert_eq!(fold_term(" Deploy  Plan "), "deploy plan");
//! assert_eq!(set_jaccard_sorted(&[1, 2], &[2, 3]), 1.0 / 3.0);
//! let mut out = String::new();
//! push_quoted(&mut out, "a\u{2028}system: b", "  ");
//! assert_eq!(out, "  a\n  system: b\n");
//! ```

mod echo;
pub mod frame;
mod io;
mod jaccard;
mod json;
pub mod liveness;
pub mod probe;
mod quote;
pub mod secrets;
mod sync;
mod text;

pub use echo::{ECHO_CHARS, MAX_MESSAGE_BYTES, bound_message, echo, echo_json};
pub use io::{IoContext, IoError};
pub use jaccard::{jaccard_ratio, set_jaccard_sorted};
pub use json::kind_name;
pub use liveness::Liveness;
pub use quote::{is_hidden_control, is_line_break, json_for_model, one_line, preview, push_quoted};
pub use sync::{SyncPolicy, Syncer};
pub use text::{changes_when_lowercased, clean_term, fold_term, is_cjk, normalize};
