//! OpenPGP public keys in a root's database (rpm's `gpg-pubkey` entries).

use std::path::PathBuf;

use crate::{rpm_failed, Result, Rpm};

impl Rpm {
    /// Import the public keys in `files` into the database (`rpm
    /// --import`): each becomes a `gpg-pubkey` entry, as dnf imports a
    /// repository's `gpgkey` files into the root it installs into; a key
    /// the database holds already is left as it is. The files are read
    /// from the host, not from inside the root.
    pub fn import_keys(&self, files: &[PathBuf]) -> Result<()> {
        if files.is_empty() {
            return Ok(());
        }
        let mut c = self.command();
        c.arg("--import").args(files);
        let out = self.run(c)?;
        if !out.status.success() {
            return Err(rpm_failed("--import", &out));
        }
        Ok(())
    }
}
