//! rpm's file flags and file actions (`rpmfiles.h`, `rpmFileAction`):
//! what the transaction decides for each file ([`crate::fate`]) and what
//! placing and registering carry out.

use serde::Serialize;

/// rpm's file flags (`rpmfiles.h`).
pub(crate) mod flag {
    pub const CONFIG: u32 = 1;
    pub const DOC: u32 = 1 << 1;
    pub const MISSINGOK: u32 = 1 << 3;
    pub const NOREPLACE: u32 = 1 << 4;
    pub const GHOST: u32 = 1 << 6;
    pub const LICENSE: u32 = 1 << 7;
}

/// rpm's file actions (`rpmFileAction`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Action {
    /// Not decided (nothing overlapped it).
    Unknown,
    /// Put the package's file in place.
    Create,
    /// Rename the file on disk to `.rpmorig`, then create.
    Backup,
    /// Rename the file on disk to `.rpmsave`, then create (or, erasing,
    /// only rename).
    Save,
    /// Leave the file alone.
    Skip,
    /// Create the package's file as `.rpmnew`, leave the one on disk.
    AltName,
    /// Remove the file.
    Erase,
    /// Not installed (excluded docs, languages, paths).
    SkipNState,
    /// Not installed: under `%_netsharedpath`.
    SkipNetShared,
    /// Not installed: a file of the transaction's other colour wins.
    SkipColor,
    /// The file on disk is already the package's: only its metadata.
    Touch,
}

impl Action {
    /// rpm's `XFA_SKIPPING`.
    pub fn skipping(self) -> bool {
        matches!(
            self,
            Action::Skip | Action::SkipNState | Action::SkipNetShared | Action::SkipColor
        )
    }

    /// rpm's name for it (`fileActionString`).
    pub fn name(self) -> &'static str {
        match self {
            Action::Unknown => "unknown",
            Action::Create => "create",
            Action::Backup => "backup",
            Action::Save => "save",
            Action::Skip => "skip",
            Action::AltName => "altname",
            Action::Erase => "erase",
            Action::SkipNState => "skipnstate",
            Action::SkipNetShared => "skipnetshared",
            Action::SkipColor => "skipcolor",
            Action::Touch => "touch",
        }
    }

    /// The file state rpm's registration records for an installed file
    /// with this action (`setFileState` in `fsm.c`): 0 normal, 2 not
    /// installed, 3 net shared, 4 wrong color.
    pub fn state(self) -> u8 {
        match self {
            Action::SkipNState => 2,
            Action::SkipNetShared => 3,
            Action::SkipColor => 4,
            _ => 0,
        }
    }

    /// Whether the package's file is written (under its name or as
    /// `.rpmnew`).
    pub fn writes(self) -> bool {
        matches!(
            self,
            Action::Unknown
                | Action::Create
                | Action::Backup
                | Action::Save
                | Action::AltName
                | Action::Touch
        )
    }
}
