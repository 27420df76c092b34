//! Triggers as a header holds them, read the same way from a package
//! file's header and from an installed package's (`rpm -q --xml`).
//!
//! A header keeps one array per trigger kind of *entries* (a name or a
//! path prefix, flags, version; `...INDEX` says which trigger each entry
//! belongs to) and one array of *scripts* (body, interpreter, flags; file
//! triggers also a priority) indexed by that number (rpm's `tix`).

/// A scriptlet as a header holds it (an installed package's, or a
/// trigger's).
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct Script {
    /// The body (empty when the scriptlet is only a program).
    pub body: String,
    /// The interpreter and its arguments (`["/bin/sh"]` when absent).
    pub prog: Vec<String>,
    /// rpm's scriptlet flags (expand 1, qformat 2, critical 4).
    pub flags: u32,
    /// The version of the rpm that built its package (`RPMVERSION`), which
    /// rpm 4.20's Lua reads.
    pub rpmver: Option<String>,
}

/// The three kinds of triggers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
pub enum TriggerKind {
    /// `%trigger*`: on package names.
    Name,
    /// `%filetrigger*`: on path prefixes, once per package.
    File,
    /// `%transfiletrigger*`: on path prefixes, once per transaction.
    TransFile,
}

impl TriggerKind {
    /// The spec file's prefix (`%`, `%file`, `%transfile`).
    pub fn prefix(self) -> &'static str {
        match self {
            TriggerKind::Name => "",
            TriggerKind::File => "file",
            TriggerKind::TransFile => "transfile",
        }
    }

    /// The header's tag names, as `rpm --xml` spells them: entry name,
    /// version, flags, index; script body, program, flags, priorities.
    pub fn tags(self) -> [&'static str; 8] {
        match self {
            TriggerKind::Name => [
                "Triggername",
                "Triggerversion",
                "Triggerflags",
                "Triggerindex",
                "Triggerscripts",
                "Triggerscriptprog",
                "Triggerscriptflags",
                "",
            ],
            TriggerKind::File => [
                "Filetriggername",
                "Filetriggerversion",
                "Filetriggerflags",
                "Filetriggerindex",
                "Filetriggerscripts",
                "Filetriggerscriptprog",
                "Filetriggerscriptflags",
                "Filetriggerpriorities",
            ],
            TriggerKind::TransFile => [
                "Transfiletriggername",
                "Transfiletriggerversion",
                "Transfiletriggerflags",
                "Transfiletriggerindex",
                "Transfiletriggerscripts",
                "Transfiletriggerscriptprog",
                "Transfiletriggerscriptflags",
                "Transfiletriggerpriorities",
            ],
        }
    }
}

/// A dependency-like entry: a name (or path prefix), rpm's sense flags
/// and a version (`[epoch:]version[-release]`, empty for none).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Dep {
    /// Name or prefix.
    pub name: String,
    /// rpm's flags (comparison bits `LESS` 2, `GREATER` 4, `EQUAL` 8,
    /// and the trigger sense bits of [`crate::sense`]).
    pub flags: u32,
    /// Version, empty when the entry has none.
    pub version: String,
}

/// One trigger of a package: its entries and its script.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct TriggerDef {
    /// Its kind.
    pub kind: TriggerKind,
    /// rpm's trigger index (`tix`).
    pub index: u32,
    /// Its entries, in header order (for file triggers: the prefixes).
    pub entries: Vec<Dep>,
    /// The script.
    pub script: Script,
    /// File triggers' priority (rpm's default is 1000000).
    pub priority: u32,
}

impl TriggerDef {
    /// The sense of its first entry (rpm looks at that one).
    pub fn sense(&self) -> u32 {
        self.entries.first().map_or(0, |e| e.flags) & crate::sense::ALL
    }
}

/// Accessors of a header's tags by their `--xml` names.
pub trait Tags {
    /// A string or string-array tag (empty when absent).
    fn strings(&self, name: &str) -> Vec<String>;
    /// An integer or integer-array tag (empty when absent).
    fn ints(&self, name: &str) -> Vec<u64>;
}

/// Every trigger of a header, all kinds, ordered by kind then index.
pub fn triggers(tags: &dyn Tags) -> Vec<TriggerDef> {
    let mut out = Vec::new();
    for kind in [TriggerKind::Name, TriggerKind::File, TriggerKind::TransFile] {
        let [name, version, flags, index, body, prog, sflags, prio] = kind.tags();
        let names = tags.strings(name);
        if names.is_empty() {
            continue;
        }
        let versions = tags.strings(version);
        let flags = tags.ints(flags);
        let index = tags.ints(index);
        let bodies = tags.strings(body);
        let progs = tags.strings(prog);
        let sflags = tags.ints(sflags);
        let prios = if prio.is_empty() {
            Vec::new()
        } else {
            tags.ints(prio)
        };
        for (tix, b) in bodies.iter().enumerate() {
            let entries: Vec<Dep> = names
                .iter()
                .enumerate()
                .filter(|(i, _)| index.get(*i).copied() == Some(tix as u64))
                .map(|(i, n)| Dep {
                    name: n.clone(),
                    flags: flags.get(i).copied().unwrap_or(0) as u32,
                    version: versions.get(i).cloned().unwrap_or_default(),
                })
                .collect();
            if entries.is_empty() {
                continue;
            }
            out.push(TriggerDef {
                kind,
                index: tix as u32,
                entries,
                script: Script {
                    body: b.clone(),
                    prog: vec![progs.get(tix).cloned().unwrap_or_else(|| "/bin/sh".into())],
                    flags: sflags.get(tix).copied().unwrap_or(0) as u32,
                    rpmver: tags.strings("Rpmversion").into_iter().next(),
                },
                priority: prios.get(tix).copied().unwrap_or(1_000_000) as u32,
            });
        }
    }
    out
}

/// A package's provides (name, flags, version), in header order.
pub fn provides(tags: &dyn Tags) -> Vec<Dep> {
    let names = tags.strings("Providename");
    let flags = tags.ints("Provideflags");
    let versions = tags.strings("Provideversion");
    names
        .into_iter()
        .enumerate()
        .map(|(i, name)| Dep {
            name,
            flags: flags.get(i).copied().unwrap_or(0) as u32,
            version: versions.get(i).cloned().unwrap_or_default(),
        })
        .collect()
}
