//! Installed packages as rpm's XML query (`rpm -q --xml`) gives them.

use std::collections::HashMap;

use quick_xml::events::Event;

use crate::triggers::Script;
use crate::{Error, Result};

/// One file of an installed package.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InstalledFile {
    /// Absolute path.
    pub path: String,
    /// Type and permission bits.
    pub mode: u32,
    /// rpm's file flags (`%config` 1, `%doc` 2, `%missingok` 8,
    /// `%noreplace` 16, `%ghost` 64).
    pub flags: u32,
    /// Hex digest of the content (regular files), empty otherwise.
    pub digest: String,
    /// rpm's file state (0 normal, 1 replaced, 2 not installed, 3 net
    /// shared, 4 wrong color, 5 missing).
    pub state: u32,
    /// Size in bytes.
    pub size: u64,
    /// Owner name.
    pub user: String,
    /// Group name.
    pub group: String,
    /// Symlink target (empty for other files).
    pub link: String,
    /// rpm's file colour (1 ELF32, 2 ELF64, 0 none).
    pub color: u32,
    /// Device number (`FILERDEVS`).
    pub rdev: u32,
    /// How many files of its package are hardlinks of it, itself
    /// included (rpm's `rpmfilesFLinks`: regular, not `%ghost` files with
    /// equal `FILEDEVICES` and `FILEINODES`); 1 for any other.
    pub nlink: u32,
}

/// rpm's hardlink counts of a package's files (`rpmfilesFLinks`): per
/// file, how many regular, not `%ghost` files share its device and inode
/// number (1 for every other file, and for a file whose inode is 0).
pub(crate) fn link_counts(modes: &[u32], flags: &[u32], devs: &[u64], inodes: &[u64]) -> Vec<u32> {
    let key = |i: usize| -> Option<(u64, u64)> {
        let reg = modes.get(i).is_some_and(|m| m & 0o170000 == 0o100000);
        let ghost = flags.get(i).is_some_and(|f| f & 64 != 0);
        let ino = inodes.get(i).copied().unwrap_or(0);
        (reg && !ghost && ino > 0).then(|| (devs.get(i).copied().unwrap_or(0), ino))
    };
    let mut count: std::collections::HashMap<(u64, u64), u32> = Default::default();
    for i in 0..modes.len() {
        if let Some(k) = key(i) {
            *count.entry(k).or_default() += 1;
        }
    }
    (0..modes.len())
        .map(|i| key(i).map_or(1, |k| count[&k]))
        .collect()
}

/// An installed package.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Installed {
    /// Name.
    pub name: String,
    /// `name-[epoch:]version-release.arch`, as rpm prints it.
    pub nevra: String,
    /// Epoch, version, release.
    pub evr: (Option<u32>, String, String),
    /// Its files.
    pub files: Vec<InstalledFile>,
    /// `%preun`.
    pub preun: Option<Script>,
    /// `%postun`.
    pub postun: Option<Script>,
    /// `%preuntrans` (rpm 4.20).
    pub preuntrans: Option<Script>,
    /// `%postuntrans` (rpm 4.20).
    pub postuntrans: Option<Script>,
    /// rpm's file digest algorithm number (8 = SHA-256; 1 = MD5 when
    /// absent).
    pub digest_algo: u32,
    /// Its triggers, all kinds.
    pub triggers: Vec<crate::triggers::TriggerDef>,
    /// What it provides.
    pub provides: Vec<crate::triggers::Dep>,
    /// Its install prefixes (`INSTPREFIXES`: a relocatable package's).
    pub prefixes: Vec<String>,
}

struct View<'a>(&'a Tags);

impl crate::triggers::Tags for View<'_> {
    fn strings(&self, name: &str) -> Vec<String> {
        strings(self.0, name)
            .into_iter()
            .map(str::to_string)
            .collect()
    }
    fn ints(&self, name: &str) -> Vec<u64> {
        ints(self.0, name)
    }
}

#[derive(Debug, Clone)]
enum Value {
    S(String),
    I(u64),
}

type Tags = HashMap<String, Vec<Value>>;

/// Parse the concatenated `<rpmHeader>` documents of `rpm -q --xml`.
pub(crate) fn parse(xml: &str) -> Result<Vec<Installed>> {
    let bad = |why: String| Error::Answer {
        what: "-q --xml",
        why,
    };
    let mut r = quick_xml::Reader::from_str(xml);
    let mut out = Vec::new();
    let mut tags: Tags = HashMap::new();
    let mut tag: Option<String> = None;
    let mut kind: Option<Vec<u8>> = None;
    let mut text = String::new();
    loop {
        match r.read_event().map_err(|e| bad(e.to_string()))? {
            Event::Start(e) => match e.name().as_ref() {
                b"rpmHeader" => tags.clear(),
                b"rpmTag" => {
                    let name = e
                        .try_get_attribute("name")
                        .map_err(|e| bad(e.to_string()))?
                        .ok_or_else(|| bad("an rpmTag without a name".into()))?;
                    // rpm's tag names are plain ASCII words.
                    let name = String::from_utf8_lossy(&name.value).into_owned();
                    tags.entry(name.clone()).or_default();
                    tag = Some(name);
                }
                k => {
                    kind = Some(k.to_vec());
                    text.clear();
                }
            },
            Event::Empty(e) => {
                if let (Some(t), b"string") = (&tag, e.name().as_ref()) {
                    tags.entry(t.clone())
                        .or_default()
                        .push(Value::S(String::new()));
                }
            }
            Event::Text(t) if kind.is_some() => {
                text.push_str(&t.decode().map_err(|e| bad(e.to_string()))?);
            }
            Event::GeneralRef(g) if kind.is_some() => {
                let name = g.decode().map_err(|e| bad(e.to_string()))?;
                let c = match &*name {
                    "amp" => "&",
                    "lt" => "<",
                    "gt" => ">",
                    "quot" => "\"",
                    "apos" => "'",
                    other => return Err(bad(format!("unknown entity &{other};"))),
                };
                text.push_str(c);
            }
            Event::End(e) => match e.name().as_ref() {
                b"rpmHeader" => out.push(package(&tags).map_err(bad)?),
                b"rpmTag" => tag = None,
                k => {
                    if let (Some(t), Some(kd)) = (&tag, &kind) {
                        if kd.as_slice() == k {
                            let v = if k == b"integer" {
                                Value::I(
                                    text.trim()
                                        .parse()
                                        .map_err(|_| bad(format!("integer `{text}`")))?,
                                )
                            } else {
                                Value::S(std::mem::take(&mut text))
                            };
                            tags.entry(t.clone()).or_default().push(v);
                        }
                    }
                    kind = None;
                }
            },
            Event::Eof => break,
            _ => {}
        }
    }
    Ok(out)
}

fn strings<'a>(tags: &'a Tags, name: &str) -> Vec<&'a str> {
    tags.get(name)
        .map(|v| {
            v.iter()
                .map(|x| match x {
                    Value::S(s) => s.as_str(),
                    Value::I(_) => "",
                })
                .collect()
        })
        .unwrap_or_default()
}

fn ints(tags: &Tags, name: &str) -> Vec<u64> {
    tags.get(name)
        .map(|v| {
            v.iter()
                .map(|x| match x {
                    Value::I(i) => *i,
                    Value::S(_) => 0,
                })
                .collect()
        })
        .unwrap_or_default()
}

fn one<'a>(tags: &'a Tags, name: &str) -> Option<&'a str> {
    strings(tags, name).first().copied()
}

fn script(tags: &Tags, body: &str, prog: &str, flags: &str) -> Option<Script> {
    let b = one(tags, body);
    let p = strings(tags, prog);
    if b.is_none() && p.is_empty() {
        return None;
    }
    Some(Script {
        body: b.unwrap_or("").to_string(),
        prog: if p.is_empty() {
            vec!["/bin/sh".to_string()]
        } else {
            p.iter().map(|s| s.to_string()).collect()
        },
        flags: ints(tags, flags).first().copied().unwrap_or(0) as u32,
        rpmver: one(tags, "Rpmversion").map(str::to_string),
    })
}

fn package(tags: &Tags) -> std::result::Result<Installed, String> {
    let name = one(tags, "Name")
        .ok_or("a header without a name")?
        .to_string();
    let version = one(tags, "Version").unwrap_or("").to_string();
    let release = one(tags, "Release").unwrap_or("").to_string();
    let arch = one(tags, "Arch").unwrap_or("noarch");
    let epoch = ints(tags, "Epoch").first().map(|&e| e as u32);
    let nevra = match epoch {
        Some(e) => format!("{name}-{e}:{version}-{release}.{arch}"),
        None => format!("{name}-{version}-{release}.{arch}"),
    };
    let base = strings(tags, "Basenames");
    let dirs = strings(tags, "Dirnames");
    let idx = ints(tags, "Dirindexes");
    let modes = ints(tags, "Filemodes");
    let flags = ints(tags, "Fileflags");
    let digests = strings(tags, "Filedigests");
    let states = ints(tags, "Filestates");
    let sizes = ints(tags, "Filesizes");
    let longsizes = ints(tags, "Longfilesizes");
    let users = strings(tags, "Fileusername");
    let groups = strings(tags, "Filegroupname");
    let links = strings(tags, "Filelinktos");
    let colors = ints(tags, "Filecolors");
    let rdevs = ints(tags, "Filerdevs");
    let nlinks = link_counts(
        &modes.iter().map(|&m| m as u32).collect::<Vec<_>>(),
        &flags.iter().map(|&f| f as u32).collect::<Vec<_>>(),
        &ints(tags, "Filedevices"),
        &ints(tags, "Fileinodes"),
    );
    let mut files = Vec::with_capacity(base.len());
    for (i, b) in base.iter().enumerate() {
        let d = idx
            .get(i)
            .and_then(|&j| dirs.get(j as usize))
            .ok_or_else(|| format!("{nevra}: file {i} has no directory"))?;
        files.push(InstalledFile {
            path: format!("{d}{b}"),
            mode: modes.get(i).copied().unwrap_or(0) as u32,
            flags: flags.get(i).copied().unwrap_or(0) as u32,
            digest: digests.get(i).copied().unwrap_or("").to_string(),
            state: states.get(i).copied().unwrap_or(0) as u32,
            size: longsizes.get(i).or(sizes.get(i)).copied().unwrap_or(0),
            user: users.get(i).copied().unwrap_or("").to_string(),
            group: groups.get(i).copied().unwrap_or("").to_string(),
            link: links.get(i).copied().unwrap_or("").to_string(),
            color: colors.get(i).copied().unwrap_or(0) as u32,
            rdev: rdevs.get(i).copied().unwrap_or(0) as u32,
            nlink: nlinks.get(i).copied().unwrap_or(1),
        });
    }
    Ok(Installed {
        preun: script(tags, "Preun", "Preunprog", "Preunflags"),
        postun: script(tags, "Postun", "Postunprog", "Postunflags"),
        preuntrans: script(tags, "Preuntrans", "Preuntransprog", "Preuntransflags"),
        postuntrans: script(tags, "Postuntrans", "Postuntransprog", "Postuntransflags"),
        digest_algo: ints(tags, "Filedigestalgo").first().copied().unwrap_or(1) as u32,
        triggers: crate::triggers::triggers(&View(tags)),
        provides: crate::triggers::provides(&View(tags)),
        prefixes: strings(tags, "Instprefixes")
            .into_iter()
            .map(str::to_string)
            .collect(),
        name,
        nevra,
        evr: (epoch, version, release),
        files,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hardlink_counts_as_rpm_counts_them() {
        let (reg, dir, ghost) = (0o100644, 0o40755, 64);
        // Two regular files on one inode, a third alone, a directory and a
        // %ghost with the same numbers, a file without an inode.
        let modes = [reg, reg, reg, dir, reg, reg];
        let flags = [0, 0, 0, 0, ghost, 0];
        let devs = [1, 1, 1, 1, 1, 1];
        let inodes = [7, 7, 8, 7, 7, 0];
        assert_eq!(
            link_counts(&modes, &flags, &devs, &inodes),
            [2, 2, 1, 1, 1, 1]
        );
        // Another device: another inode.
        assert_eq!(link_counts(&[reg, reg], &[0, 0], &[1, 2], &[5, 5]), [1, 1]);
    }

    #[test]
    fn parses_rpm_xml() {
        let xml = r#"<rpmHeader>
  <rpmTag name="Name">
	<string>pkgf</string>
  </rpmTag>
  <rpmTag name="Version">
	<string>1.0</string>
  </rpmTag>
  <rpmTag name="Release">
	<string>1</string>
  </rpmTag>
  <rpmTag name="Arch">
	<string>noarch</string>
  </rpmTag>
  <rpmTag name="Preun">
	<string>echo "a &amp;&amp; b &lt;x&gt;" $1</string>
  </rpmTag>
  <rpmTag name="Filemodes">
	<integer>16877</integer>
	<integer>33188</integer>
  </rpmTag>
  <rpmTag name="Filedigests">
	<string/>
	<string>092f</string>
  </rpmTag>
  <rpmTag name="Fileflags">
	<integer>0</integer>
	<integer>17</integer>
  </rpmTag>
  <rpmTag name="Dirindexes">
	<integer>0</integer>
	<integer>1</integer>
  </rpmTag>
  <rpmTag name="Basenames">
	<string>pkgf</string>
	<string>f</string>
  </rpmTag>
  <rpmTag name="Dirnames">
	<string>/usr/share/</string>
	<string>/usr/share/pkgf/</string>
  </rpmTag>
</rpmHeader>
<rpmHeader>
  <rpmTag name="Name">
	<string>other</string>
  </rpmTag>
  <rpmTag name="Epoch">
	<integer>2</integer>
  </rpmTag>
</rpmHeader>
"#;
        let v = parse(xml).unwrap();
        assert_eq!(v.len(), 2);
        assert_eq!(v[0].nevra, "pkgf-1.0-1.noarch");
        assert_eq!(v[0].preun.as_ref().unwrap().body, r#"echo "a && b <x>" $1"#);
        assert_eq!(v[0].preun.as_ref().unwrap().prog, ["/bin/sh"]);
        assert!(v[0].postun.is_none());
        assert_eq!(v[0].files.len(), 2);
        assert_eq!(v[0].files[1].path, "/usr/share/pkgf/f");
        assert_eq!(v[0].files[1].flags, 17);
        assert_eq!(v[0].files[1].digest, "092f");
        assert_eq!(v[0].files[0].digest, "");
        assert_eq!(v[1].nevra, "other-2:-.noarch");
        assert!(parse(
            "<rpmHeader><rpmTag name=\"Name\"><integer>x</integer></rpmTag></rpmHeader>"
        )
        .is_err());
    }
}
