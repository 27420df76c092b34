//! File capabilities: the text form RPM headers carry (tag `FILECAPS`)
//! and the binary `security.capability` extended attribute the kernel
//! reads.
//!
//! The text form is the one documented in `cap_from_text(3)`: clauses
//! separated by whitespace, each a comma-separated list of capability names
//! followed by one or more operator/flag groups, applied in order to three
//! initially empty sets (permitted, inheritable, effective):
//!
//! - names are `cap_*` (any case), `all`, or numbers 0 to 63 written like C
//!   integer literals (`13`, `0xd`, and `015`, which is octal: 13); a clause may leave the list
//!   empty only when it is a bare `=` plus flags (`=ep`), which, like `all`,
//!   means every capability the kernel headers name (0 to [`LAST_CAP`]);
//! - operators: `=` clears the listed capabilities in all three sets and
//!   then raises the flags that follow (it may only come first in a
//!   clause), `+` raises and `-` lowers them (these need at least one flag);
//! - flags: `e` (effective), `i` (inheritable), `p` (permitted), lower case.
//!
//! A file has one effective *flag*, not an effective set: when it is set
//! the kernel raises every capability the file grants. So a text whose
//! effective set is not empty must list in it every permitted and
//! inheritable capability ([`CapsError::EffectiveMismatch`]), as
//! `setcap(8)` demands. Like `setcap`, extra effective capabilities that
//! are neither permitted nor inheritable are accepted and do nothing.
//!
//! [`from_text`] writes revision 2 of `struct vfs_cap_data` (20 bytes,
//! the form `setcap` writes outside user namespaces); [`to_text`] reads
//! revisions 1, 2 and 3.
//!
//! ```
//! use cowkit_fs::caps::{from_text, to_text, CapSets, CapsError};
//!
//! let value = from_text("cap_net_admin,cap_net_raw=ep")?.expect("grants something");
//! assert_eq!(value.len(), 20);
//! assert_eq!(to_text(&value)?, "cap_net_admin,cap_net_raw=ep");
//!
//! // Nothing granted: there is no attribute to set.
//! assert_eq!(from_text("")?, None);
//! assert_eq!(from_text("cap_chown=ep cap_chown-ep")?, None);
//!
//! // One effective flag cannot express "permitted, but effective only in part".
//! assert!(matches!(
//!     from_text("cap_chown=p cap_kill=ep"),
//!     Err(CapsError::EffectiveMismatch { .. })
//! ));
//! assert_eq!(CapSets::parse("cap_kill+i cap_kill+p")?.inheritable, 1 << 5);
//! # Ok::<(), CapsError>(())
//! ```

use std::fmt;

use linux_raw_sys::general as k;

/// Name of the extended attribute that holds a file's capabilities.
pub const XATTR_NAME: &str = "security.capability";

/// Highest capability number with a name: `CAP_CHECKPOINT_RESTORE`.
/// `all` and a bare `=` cover 0 to this.
pub const LAST_CAP: u32 = 40;

/// Highest capability number the binary format can hold.
pub const MAX_CAP: u32 = 63;

/// Names of capabilities 0 to [`LAST_CAP`], numbered by the kernel's
/// `include/uapi/linux/capability.h` (via `linux-raw-sys`).
const NAMES: [(u32, &str); LAST_CAP as usize + 1] = [
    (k::CAP_CHOWN, "cap_chown"),
    (k::CAP_DAC_OVERRIDE, "cap_dac_override"),
    (k::CAP_DAC_READ_SEARCH, "cap_dac_read_search"),
    (k::CAP_FOWNER, "cap_fowner"),
    (k::CAP_FSETID, "cap_fsetid"),
    (k::CAP_KILL, "cap_kill"),
    (k::CAP_SETGID, "cap_setgid"),
    (k::CAP_SETUID, "cap_setuid"),
    (k::CAP_SETPCAP, "cap_setpcap"),
    (k::CAP_LINUX_IMMUTABLE, "cap_linux_immutable"),
    (k::CAP_NET_BIND_SERVICE, "cap_net_bind_service"),
    (k::CAP_NET_BROADCAST, "cap_net_broadcast"),
    (k::CAP_NET_ADMIN, "cap_net_admin"),
    (k::CAP_NET_RAW, "cap_net_raw"),
    (k::CAP_IPC_LOCK, "cap_ipc_lock"),
    (k::CAP_IPC_OWNER, "cap_ipc_owner"),
    (k::CAP_SYS_MODULE, "cap_sys_module"),
    (k::CAP_SYS_RAWIO, "cap_sys_rawio"),
    (k::CAP_SYS_CHROOT, "cap_sys_chroot"),
    (k::CAP_SYS_PTRACE, "cap_sys_ptrace"),
    (k::CAP_SYS_PACCT, "cap_sys_pacct"),
    (k::CAP_SYS_ADMIN, "cap_sys_admin"),
    (k::CAP_SYS_BOOT, "cap_sys_boot"),
    (k::CAP_SYS_NICE, "cap_sys_nice"),
    (k::CAP_SYS_RESOURCE, "cap_sys_resource"),
    (k::CAP_SYS_TIME, "cap_sys_time"),
    (k::CAP_SYS_TTY_CONFIG, "cap_sys_tty_config"),
    (k::CAP_MKNOD, "cap_mknod"),
    (k::CAP_LEASE, "cap_lease"),
    (k::CAP_AUDIT_WRITE, "cap_audit_write"),
    (k::CAP_AUDIT_CONTROL, "cap_audit_control"),
    (k::CAP_SETFCAP, "cap_setfcap"),
    (k::CAP_MAC_OVERRIDE, "cap_mac_override"),
    (k::CAP_MAC_ADMIN, "cap_mac_admin"),
    (k::CAP_SYSLOG, "cap_syslog"),
    (k::CAP_WAKE_ALARM, "cap_wake_alarm"),
    (k::CAP_BLOCK_SUSPEND, "cap_block_suspend"),
    (k::CAP_AUDIT_READ, "cap_audit_read"),
    (k::CAP_PERFMON, "cap_perfmon"),
    (k::CAP_BPF, "cap_bpf"),
    (k::CAP_CHECKPOINT_RESTORE, "cap_checkpoint_restore"),
];

// The table is indexed by capability number.
const _: () = {
    let mut i = 0;
    while i < NAMES.len() {
        assert!(NAMES[i].0 == i as u32);
        i += 1;
    }
};

/// Every named capability: what `all` and a bare `=` stand for.
const ALL: u64 = (1 << (LAST_CAP + 1)) - 1;

// Sizes of `struct vfs_cap_data` by revision: the magic word, then a
// permitted and an inheritable word per 32 capabilities; revision 3 adds
// the namespace root uid.
const SIZE_1: usize = 4 * (1 + 2 * k::VFS_CAP_U32_1 as usize);
const SIZE_2: usize = 4 * (1 + 2 * k::VFS_CAP_U32_2 as usize);
const SIZE_3: usize = 4 * (1 + 2 * k::VFS_CAP_U32_3 as usize) + 4;

/// What can be wrong with capability text or a `security.capability` value.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum CapsError {
    /// A name in the text is not a capability.
    #[error(
        "unknown capability `{name}` in `{text}`: use a `cap_*` name from capabilities(7), \
         `all`, or a number from 0 to 63"
    )]
    UnknownName {
        /// The name as written.
        name: String,
        /// The whole text.
        text: String,
    },

    /// The text does not follow the `cap_from_text(3)` grammar.
    #[error("bad capability text `{text}` at byte {pos}: expected {expected}")]
    Syntax {
        /// The whole text.
        text: String,
        /// Byte offset of the first character that does not fit.
        pos: usize,
        /// What would have fitted there.
        expected: &'static str,
    },

    /// The effective set is neither empty nor a superset of the permitted
    /// and inheritable sets, which a file's single effective flag cannot
    /// express.
    #[error(
        "capabilities `{sets}` cannot be stored on a file: a file has one effective flag, \
         so the effective set must be empty or hold every permitted and inheritable \
         capability, and it lacks {}",
        Names(*missing)
    )]
    EffectiveMismatch {
        /// The sets as parsed.
        sets: CapSets,
        /// Permitted or inheritable capabilities missing from the effective
        /// set, one bit per capability.
        missing: u64,
    },

    /// The attribute's size does not match its revision.
    #[error(
        "`security.capability` value of {len} bytes is the wrong size{}",
        match revision {
            Some(r) => format!(" for revision {r}"),
            None => String::new(),
        }
    )]
    XattrLength {
        /// Its size.
        len: usize,
        /// The revision it claims, if it is long enough to claim one.
        revision: Option<u32>,
    },

    /// The attribute claims a revision other than 1, 2 or 3.
    #[error("`security.capability` value has unknown revision {revision} (known: 1, 2, 3)")]
    XattrRevision {
        /// The revision number (the magic word's top byte).
        revision: u32,
    },
}

/// Permitted, inheritable and effective sets, one bit per capability
/// number.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct CapSets {
    /// Capabilities the file may grant.
    pub permitted: u64,
    /// Capabilities the file grants if the process's inheritable set has
    /// them too.
    pub inheritable: u64,
    /// Capabilities raised in the effective set on `execve`.
    pub effective: u64,
}

/// A decoded `security.capability` value.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct FileCaps {
    /// The sets; `effective` is `permitted | inheritable` when the
    /// effective flag is set and empty otherwise.
    pub sets: CapSets,
    /// The format revision: 1, 2 or 3.
    pub revision: u32,
    /// For revision 3, the user namespace root the capabilities apply to.
    pub rootid: Option<u32>,
}

impl CapSets {
    /// Parse the `cap_from_text(3)` form (see the [module docs](self)).
    pub fn parse(text: &str) -> Result<CapSets, CapsError> {
        let mut parser = Parser {
            text,
            bytes: text.as_bytes(),
            pos: 0,
            sets: CapSets::default(),
        };
        loop {
            while parser.peek().is_some_and(is_space) {
                parser.pos += 1;
            }
            if parser.peek().is_none() {
                return Ok(parser.sets);
            }
            parser.clause()?;
        }
    }

    /// Whether the file would grant nothing: no permitted and no
    /// inheritable capability.
    pub fn grants_nothing(&self) -> bool {
        self.permitted | self.inheritable == 0
    }

    /// Encode as a revision 2 `security.capability` value, byte for byte
    /// what `setcap(8)` writes outside a user namespace, even when the sets
    /// grant nothing. Fails with [`CapsError::EffectiveMismatch`] when the
    /// effective set is not empty and lacks a permitted or inheritable
    /// capability.
    pub fn to_xattr(&self) -> Result<Vec<u8>, CapsError> {
        let missing = (self.permitted | self.inheritable) & !self.effective;
        if self.effective != 0 && missing != 0 {
            return Err(CapsError::EffectiveMismatch {
                sets: *self,
                missing,
            });
        }
        let mut magic = k::VFS_CAP_REVISION_2;
        if self.effective != 0 {
            magic |= k::VFS_CAP_FLAGS_EFFECTIVE;
        }
        let words = [
            magic,
            self.permitted as u32,
            self.inheritable as u32,
            (self.permitted >> 32) as u32,
            (self.inheritable >> 32) as u32,
        ];
        Ok(words.iter().flat_map(|w| w.to_le_bytes()).collect())
    }
}

/// The libcap text form: clauses `names=flags` grouping capabilities that
/// have the same flags, `=flags` first when every named capability has
/// them, and `=` for nothing at all. [`CapSets::parse`] reads it back to
/// the same sets.
impl fmt::Display for CapSets {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Group the capabilities by their flags, in order of first
        // appearance.
        let mut groups: Vec<(u8, u64)> = Vec::new();
        for cap in 0..=MAX_CAP {
            let flags = self.flags_of(cap);
            if flags == 0 {
                continue;
            }
            match groups.iter_mut().find(|(g, _)| *g == flags) {
                Some((_, mask)) => *mask |= 1 << cap,
                None => groups.push((flags, 1 << cap)),
            }
        }
        if groups.is_empty() {
            return f.write_str("=");
        }
        let mut first = true;
        // `=flags` resets everything before it, so it must come first.
        if let Some(i) = groups.iter().position(|&(_, m)| m & ALL == ALL) {
            write!(f, "={}", Flags(groups[i].0))?;
            groups[i].1 &= !ALL;
            first = false;
        }
        for (flags, mask) in groups {
            if mask == 0 {
                continue;
            }
            if !first {
                f.write_str(" ")?;
            }
            first = false;
            write!(f, "{}={}", Names(mask), Flags(flags))?;
        }
        Ok(())
    }
}

impl CapSets {
    /// Flag bits of one capability: `E | I | P`.
    fn flags_of(&self, cap: u32) -> u8 {
        let bit = |set: u64| set >> cap & 1 == 1;
        let mut flags = 0;
        if bit(self.effective) {
            flags |= E;
        }
        if bit(self.inheritable) {
            flags |= I;
        }
        if bit(self.permitted) {
            flags |= P;
        }
        flags
    }
}

/// Parse libcap capability text into the `security.capability` value to
/// set, or `None` when it grants nothing (empty text, `=`, or sets with no
/// permitted and no inheritable capability), so there is no attribute to
/// set. The value is revision 2 and matches `setcap(8)` byte for byte.
///
/// Unlike `setcap`, which writes an all-zero attribute for text that grants
/// nothing, this returns `None`; use [`CapSets::to_xattr`] for the exact
/// `setcap` bytes.
pub fn from_text(text: &str) -> Result<Option<Vec<u8>>, CapsError> {
    let sets = CapSets::parse(text)?;
    let value = sets.to_xattr()?;
    Ok((!sets.grants_nothing()).then_some(value))
}

/// Decode a `security.capability` value of revision 1, 2 or 3. The sizes
/// must be exact, as the kernel requires; flag bits other than the
/// effective flag are ignored, as the kernel does.
pub fn decode(xattr: &[u8]) -> Result<FileCaps, CapsError> {
    let word = |i: usize| {
        let b = &xattr[4 * i..4 * i + 4];
        u32::from_le_bytes([b[0], b[1], b[2], b[3]])
    };
    let wrong_size = |revision| CapsError::XattrLength {
        len: xattr.len(),
        revision,
    };
    if xattr.len() < 4 {
        return Err(wrong_size(None));
    }
    let magic = word(0);
    let revision_bits = magic & k::VFS_CAP_REVISION_MASK;
    let revision = revision_bits >> k::VFS_CAP_REVISION_SHIFT;
    let size = match revision_bits {
        k::VFS_CAP_REVISION_1 => SIZE_1,
        k::VFS_CAP_REVISION_2 => SIZE_2,
        k::VFS_CAP_REVISION_3 => SIZE_3,
        _ => return Err(CapsError::XattrRevision { revision }),
    };
    if xattr.len() != size {
        return Err(wrong_size(Some(revision)));
    }
    let (mut permitted, mut inheritable) = (u64::from(word(1)), u64::from(word(2)));
    if size >= SIZE_2 {
        permitted |= u64::from(word(3)) << 32;
        inheritable |= u64::from(word(4)) << 32;
    }
    let effective = if magic & k::VFS_CAP_FLAGS_EFFECTIVE != 0 {
        permitted | inheritable
    } else {
        0
    };
    Ok(FileCaps {
        sets: CapSets {
            permitted,
            inheritable,
            effective,
        },
        revision,
        rootid: (size == SIZE_3).then(|| word(5)),
    })
}

/// The libcap text form of a `security.capability` value (revision 1, 2
/// or 3), as formatted by [`CapSets`]'s `Display`. A revision 3 root uid is
/// not shown; use [`decode`] for it.
pub fn to_text(xattr: &[u8]) -> Result<String, CapsError> {
    Ok(decode(xattr)?.sets.to_string())
}

/// The name of capability `cap`, if it has one.
pub fn name(cap: u32) -> Option<&'static str> {
    NAMES.get(cap as usize).map(|&(_, n)| n)
}

/// The number of the capability called `name` (`cap_*`, any case).
pub fn number(name: &str) -> Option<u32> {
    NAMES
        .iter()
        .find(|(_, n)| n.eq_ignore_ascii_case(name))
        .map(|&(c, _)| c)
}

const E: u8 = 1;
const I: u8 = 2;
const P: u8 = 4;

struct Parser<'a> {
    text: &'a str,
    bytes: &'a [u8],
    pos: usize,
    sets: CapSets,
}

impl Parser<'_> {
    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.pos).copied()
    }

    fn syntax(&self, expected: &'static str) -> CapsError {
        CapsError::Syntax {
            text: self.text.to_owned(),
            pos: self.pos,
            expected,
        }
    }

    /// One clause, starting at a non-space byte; stops at whitespace or the
    /// end.
    fn clause(&mut self) -> Result<(), CapsError> {
        let named = self.peek() != Some(b'=');
        let mask = if named { self.names()? } else { ALL };
        let mut op = match self.peek() {
            Some(c @ (b'=' | b'+' | b'-')) => c,
            _ => return Err(self.syntax("`,`, `=`, `+` or `-`")),
        };
        loop {
            self.pos += 1;
            let start = self.pos;
            let mut flags = 0;
            while let Some(flag) = self.peek().and_then(flag) {
                flags |= flag;
                self.pos += 1;
            }
            if op != b'=' && self.pos == start {
                return Err(self.syntax("a flag (`e`, `i` or `p`) after `+` or `-`"));
            }
            self.apply(op, mask, flags);
            match self.peek() {
                None => return Ok(()),
                Some(c) if is_space(c) => return Ok(()),
                Some(c @ (b'+' | b'-')) if named => op = c,
                Some(_) if named => return Err(self.syntax(
                    "a flag (`e`, `i` or `p`), `+`, `-` or whitespace (`=` may only come first)",
                )),
                Some(_) => {
                    return Err(
                        self.syntax("a flag (`e`, `i` or `p`) or whitespace after a bare `=`")
                    )
                }
            }
        }
    }

    /// A comma-separated list of names; returns their bits.
    fn names(&mut self) -> Result<u64, CapsError> {
        let mut mask = 0;
        loop {
            let start = self.pos;
            while self
                .peek()
                .is_some_and(|c| c.is_ascii_alphanumeric() || c == b'_')
            {
                self.pos += 1;
            }
            if self.pos == start {
                return Err(self.syntax("a capability name (only a bare `=` may have none)"));
            }
            let name = &self.text[start..self.pos];
            mask |= lookup(name).ok_or_else(|| CapsError::UnknownName {
                name: name.to_owned(),
                text: self.text.to_owned(),
            })?;
            if self.peek() != Some(b',') {
                return Ok(mask);
            }
            self.pos += 1;
        }
    }

    fn apply(&mut self, op: u8, mask: u64, flags: u8) {
        let sets = &mut self.sets;
        if op == b'=' {
            sets.permitted &= !mask;
            sets.inheritable &= !mask;
            sets.effective &= !mask;
        }
        for (flag, set) in [
            (E, &mut sets.effective),
            (I, &mut sets.inheritable),
            (P, &mut sets.permitted),
        ] {
            if flags & flag != 0 {
                if op == b'-' {
                    *set &= !mask;
                } else {
                    *set |= mask;
                }
            }
        }
    }
}

/// Whitespace as C's `isspace` sees it (Rust's ASCII whitespace lacks
/// vertical tab).
fn is_space(c: u8) -> bool {
    matches!(c, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r')
}

fn flag(c: u8) -> Option<u8> {
    match c {
        b'e' => Some(E),
        b'i' => Some(I),
        b'p' => Some(P),
        _ => None,
    }
}

/// Bits for one name: `all`, a `cap_*` name, or a number 0 to 63.
fn lookup(name: &str) -> Option<u64> {
    if name.eq_ignore_ascii_case("all") {
        return Some(ALL);
    }
    let cap = if name.starts_with(|c: char| c.is_ascii_digit()) {
        c_integer(name)?
    } else {
        u64::from(number(name)?)
    };
    (cap <= u64::from(MAX_CAP)).then(|| 1 << cap)
}

/// A non-negative C integer literal: `0x` hexadecimal, leading-`0` octal,
/// or decimal, the whole string.
fn c_integer(s: &str) -> Option<u64> {
    let (digits, radix) = if let Some(hex) = s.strip_prefix("0x").or(s.strip_prefix("0X")) {
        (hex, 16)
    } else if s.len() > 1 && s.starts_with('0') {
        (&s[1..], 8)
    } else {
        (s, 10)
    };
    if digits.is_empty() {
        return None;
    }
    digits.chars().try_fold(0u64, |n, c| {
        n.checked_mul(radix)?
            .checked_add(u64::from(c.to_digit(radix as u32)?))
    })
}

/// Capability names joined with commas; numbers for unnamed ones.
struct Names(u64);

impl fmt::Display for Names {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut first = true;
        for cap in (0..=MAX_CAP).filter(|c| self.0 >> c & 1 == 1) {
            if !first {
                f.write_str(",")?;
            }
            first = false;
            match name(cap) {
                Some(n) => f.write_str(n)?,
                None => write!(f, "{cap}")?,
            }
        }
        Ok(())
    }
}

/// Flags in the order `getcap` prints them: `e`, `i`, `p`.
struct Flags(u8);

impl fmt::Display for Flags {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (bit, c) in [(E, "e"), (I, "i"), (P, "p")] {
            if self.0 & bit != 0 {
                f.write_str(c)?;
            }
        }
        Ok(())
    }
}
