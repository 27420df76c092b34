//! The progress line of `cp` and `rm`: the workers count entries and bytes
//! in atomics, and the bar is told only every [`EVERY`] entries. Telling
//! indicatif of each entry (a clock read, a lock and, for `cp`, a formatted
//! message per file) cost more user time than the rest of the copy.

use std::sync::atomic::{AtomicU64, Ordering};

use cowkit_tree::{EntryError, Progress};
use indicatif::{ProgressBar, ProgressStyle};

use crate::output::human_bytes;

/// Entries between two updates of the bar.
const EVERY: u64 = 512;

/// A spinner with `{human_pos} entries <verb> ({per_sec})`, and for copies
/// the bytes moved so far.
pub struct TreeBar {
    bar: ProgressBar,
    json: bool,
    entries: AtomicU64,
    bytes: AtomicU64,
}

impl TreeBar {
    /// A bar for entries `verb` ("copied", "removed"), hidden when `hidden`.
    pub fn new(verb: &str, hidden: bool, json: bool) -> Self {
        let bar = ProgressBar::new_spinner();
        if hidden {
            bar.set_draw_target(indicatif::ProgressDrawTarget::hidden());
        }
        let template = format!("{{spinner}} {{human_pos}} entries {verb} ({{per_sec}}) {{msg}}");
        bar.set_style(ProgressStyle::with_template(&template).expect("valid template"));
        bar.enable_steady_tick(std::time::Duration::from_millis(200));
        TreeBar {
            bar,
            json,
            entries: AtomicU64::new(0),
            bytes: AtomicU64::new(0),
        }
    }

    /// Run `f` with the bar out of the way (to print a line).
    pub fn suspend<R>(&self, f: impl FnOnce() -> R) -> R {
        self.bar.suspend(f)
    }

    /// Remove the bar from the terminal.
    pub fn finish_and_clear(&self) {
        self.bar.finish_and_clear();
    }
}

impl Progress for TreeBar {
    fn on_entry(&self, bytes: u64) {
        let n = self.entries.fetch_add(1, Ordering::Relaxed) + 1;
        let total = self.bytes.fetch_add(bytes, Ordering::Relaxed) + bytes;
        if n.is_multiple_of(EVERY) {
            self.bar.set_position(n);
            if total > 0 {
                self.bar.set_message(human_bytes(total));
            }
        }
    }
    fn on_error(&self, e: &EntryError) {
        if !self.json {
            self.bar.suspend(|| eprintln!("error: {e}"));
        }
    }
}
