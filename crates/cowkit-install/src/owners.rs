//! Owner and group names resolved in the target root's own `/etc/passwd`
//! and `/etc/group`, as rpm does for `--root`.

use std::collections::HashMap;
use std::sync::Mutex;

use cowkit_fs::root::Root;

/// Name → id maps of one root, and the names that were not found.
#[derive(Debug, Default)]
pub struct Owners {
    users: HashMap<String, u32>,
    groups: HashMap<String, u32>,
    missing: Mutex<Vec<String>>,
    /// Entries installed by a user without the package's owner.
    not_root: std::sync::atomic::AtomicBool,
}

/// The one warning of an install by a user whose entries could not get
/// the package's owners.
pub const NOT_ROOT_WARNING: &str = "not running as root: entries keep your owner and group instead of the package's (as cpio does); those that should belong to someone else lose their setuid and setgid bits, and file capabilities are not set";

/// The name → id map of a `passwd` or `group` file: the first and third
/// `:`-separated fields of each line; comments, empty names and lines
/// whose id is not a number are skipped. (Also the `owners` fuzz target.)
pub fn parse(text: &str) -> HashMap<String, u32> {
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| {
            let mut f = l.split(':');
            let name = f.next()?;
            let id = f.nth(1)?.parse().ok()?;
            (!name.is_empty()).then(|| (name.to_string(), id))
        })
        .collect()
}

fn read_in_root(root: &Root, path: &str) -> Option<String> {
    root.read_text(path, 64 << 20)
}

impl Owners {
    /// Read `etc/passwd` and `etc/group` inside `root` (absent files give
    /// empty maps: only `root` and numeric names resolve then).
    pub fn load(root: &Root) -> Owners {
        Owners {
            users: read_in_root(root, "etc/passwd").map_or_else(HashMap::new, |t| parse(&t)),
            groups: read_in_root(root, "etc/group").map_or_else(HashMap::new, |t| parse(&t)),
            missing: Mutex::new(Vec::new()),
            not_root: std::sync::atomic::AtomicBool::new(false),
        }
    }

    fn lookup(&self, map: &HashMap<String, u32>, kind: &str, name: &str) -> u32 {
        if let Some(&id) = map.get(name) {
            return id;
        }
        if name == "root" {
            return 0;
        }
        let numeric = name.parse::<u32>().ok();
        let mut missing = self.missing.lock().unwrap_or_else(|e| e.into_inner());
        let note = match numeric {
            Some(n) => {
                format!("{kind} `{name}` is not in the root's database; using the number {n}")
            }
            None => format!("{kind} `{name}` does not exist in the root; using root (0)"),
        };
        if !missing.contains(&note) {
            missing.push(note);
        }
        numeric.unwrap_or(0)
    }

    /// The uid of user `name`.
    pub fn uid(&self, name: &str) -> u32 {
        self.lookup(&self.users, "user", name)
    }

    /// The gid of group `name`.
    pub fn gid(&self, name: &str) -> u32 {
        self.lookup(&self.groups, "group", name)
    }

    /// Note that an entry did not get the package's owner (or its
    /// capabilities) because we are not root: one warning in the end.
    pub fn note_not_root(&self) {
        self.not_root
            .store(true, std::sync::atomic::Ordering::Relaxed);
    }

    /// Warnings about names that did not resolve, one per name, and the
    /// one about ownership not kept by a user.
    pub fn warnings(&self) -> Vec<String> {
        let mut w = self
            .missing
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        if self.not_root.load(std::sync::atomic::Ordering::Relaxed) {
            w.push(NOT_ROOT_WARNING.to_string());
        }
        w
    }
}
