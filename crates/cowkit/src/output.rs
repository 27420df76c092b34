//! Error reports with causes and hints, and JSON printing.

use std::fmt::Display;
use std::io::Write;

/// A CLI error: what failed, the library error behind it, and a hint.
#[derive(Debug)]
pub struct CliError {
    context: String,
    /// Lines under the message, one item each (the packages that failed,
    /// the options refused).
    lines: Vec<String>,
    source: Option<Box<dyn std::error::Error + Send + Sync>>,
    hint: Option<String>,
}

/// One cause of a [`CliError::from_chain`].
#[derive(Debug)]
struct Cause {
    text: String,
    source: Option<Box<Cause>>,
}

impl Display for Cause {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.text)
    }
}

impl std::error::Error for Cause {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.source
            .as_deref()
            .map(|c| c as &(dyn std::error::Error + 'static))
    }
}

impl CliError {
    /// An error with `context` in front of `source`.
    pub fn new(
        context: impl Display,
        source: impl std::error::Error + Send + Sync + 'static,
    ) -> Self {
        CliError {
            context: context.to_string(),
            lines: Vec::new(),
            source: Some(Box::new(source)),
            hint: None,
        }
    }

    /// An error whose causes were already put into words (a library's
    /// per-item failure: `cowkit_fs::error::chain` of it).
    pub fn from_chain(context: impl Display, causes: &[String]) -> Self {
        let source = causes.iter().rev().fold(None, |inner, text| {
            Some(Box::new(Cause {
                text: text.clone(),
                source: inner,
            }))
        });
        CliError {
            context: context.to_string(),
            lines: Vec::new(),
            source: source.map(|b| b as Box<dyn std::error::Error + Send + Sync>),
            hint: None,
        }
    }

    /// An error with no library error behind it.
    pub fn msg(context: impl Display) -> Self {
        CliError {
            context: context.to_string(),
            lines: Vec::new(),
            source: None,
            hint: None,
        }
    }

    /// An error about several items: `context` (ending in `:`), then one
    /// line per item, each printed on its own line under it.
    pub fn with_lines(context: impl Display, lines: Vec<String>) -> Self {
        CliError {
            lines,
            ..CliError::msg(context)
        }
    }

    /// Add a `hint:` line.
    pub fn hint(mut self, hint: impl Display) -> Self {
        self.hint = Some(hint.to_string());
        self
    }
}

impl CliError {
    /// The hint, if there is one.
    pub fn hint_text(&self) -> Option<&str> {
        self.hint.as_deref()
    }

    /// The message, its lines and its causes, outermost first.
    pub fn chain(&self) -> Vec<String> {
        let mut v = vec![self.context.clone()];
        v.extend(self.lines.iter().cloned());
        if let Some(s) = self.source.as_deref() {
            v.extend(cowkit_fs::error::chain(s));
        }
        v
    }
}

/// Print `e` as `error: …`, its lines indented under it, one
/// `caused by:` line per source, and `hint:`.
pub fn report_error(e: &CliError) {
    let mut err = std::io::stderr().lock();
    let _ = writeln!(err, "error: {}", one_line(&e.context));
    for l in &e.lines {
        let _ = writeln!(err, "  {}", one_line(l));
    }
    let causes: Vec<String> = match e.source.as_deref() {
        Some(s) => cowkit_fs::error::chain(s),
        None => Vec::new(),
    };
    for s in causes {
        let _ = writeln!(err, "  caused by: {}", one_line(&s));
    }
    if let Some(h) = &e.hint {
        let _ = writeln!(err, "hint: {}", one_line(h));
    }
}

/// A signal arrived while a transaction runs: say that it waits for the
/// transaction's end, as rpm's does, and which scriptlets run now.
pub fn report_deferred_signal(sig: i32, running: &[cowkit_install::interrupt::Running]) {
    let mut err = std::io::stderr().lock();
    let name = signal_hook::low_level::signal_name(sig).unwrap_or("a signal");
    let _ = writeln!(
        err,
        "warning: {name} received: the transaction finishes first (rpm's does the same), then cowkit exits"
    );
    for r in running {
        let name = one_line(&r.name);
        let _ = match (r.pid, r.lua) {
            (Some(pid), false) => writeln!(err, "  waiting for {name} (process {pid})"),
            (Some(pid), true) => writeln!(
                err,
                "  waiting for {name} (rpm's Lua, in cowkit's Lua host, process {pid})"
            ),
            (None, _) => writeln!(err, "  waiting for {name}"),
        };
    }
    if running.iter().any(|r| r.pid.is_some() && !r.lua) {
        let _ = writeln!(
            err,
            "hint: a scriptlet that never ends stops when its process is killed (`kill PID`); the transaction then goes on with it failed, as under rpm"
        );
    }
    if running.iter().any(|r| r.pid.is_some() && r.lua) {
        let _ = writeln!(
            err,
            "hint: a <lua> scriptlet that never ends stops when its Lua host is killed (`kill -KILL PID`: like rpm, the host defers other signals); the transaction then goes on with it failed, and a new host runs the later <lua> scriptlets"
        );
    }
}

/// The longest message line printed, in characters.
const MAX_LINE: usize = 2000;

/// `text` safe to print on one terminal line: control characters escaped
/// (a hostile name cannot move the cursor or start an escape sequence),
/// at most [`MAX_LINE`] characters.
pub fn one_line(text: &str) -> String {
    let mut out = String::new();
    for (i, c) in text.chars().enumerate() {
        if i == MAX_LINE {
            out.push_str("… (cut)");
            break;
        }
        if c.is_control() {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    out
}

/// `-j N`, or the number of CPUs.
pub fn jobs(asked: Option<usize>) -> usize {
    asked
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
        .max(1)
}

/// Print `value` as pretty JSON on stdout. A closed pipe is not an error.
pub fn print_json(value: &impl serde::Serialize) {
    let mut out = std::io::stdout().lock();
    let _ = serde_json::to_writer_pretty(&mut out, value);
    let _ = writeln!(out);
}

/// `1536` → `1.5 KiB`.
pub fn human_bytes(n: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = n as f64;
    let mut u = 0;
    while v >= 1024.0 && u < UNITS.len() - 1 {
        v /= 1024.0;
        u += 1;
    }
    if u == 0 {
        format!("{n} B")
    } else {
        format!("{v:.1} {}", UNITS[u])
    }
}

/// What the data of many files took, as `install` and `cp` both say it:
/// `1.0 MiB cloned, 0 B copied in kernel, 4.0 KiB written`.
pub fn tally_text(t: &cowkit_fs::Tally) -> String {
    format!(
        "{} cloned, {} copied in kernel, {} written",
        human_bytes(t.bytes.cloned),
        human_bytes(t.bytes.copied),
        human_bytes(t.bytes.written)
    )
}

/// One `fallback:` line per fallback taken, with how many files it hit.
pub fn print_fallbacks(t: &cowkit_fs::Tally) {
    for (why, n) in &t.fallbacks {
        eprintln!("fallback: {why} ({n} files)");
    }
}
