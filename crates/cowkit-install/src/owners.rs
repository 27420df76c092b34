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
}

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

    /// Warnings about names that did not resolve, one per name.
    pub fn warnings(&self) -> Vec<String> {
        self.missing
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }
}
