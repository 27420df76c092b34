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

impl Rpm {
    /// The public keys the database holds (its `gpg-pubkey` entries), each
    /// as rpm keeps it: an ASCII-armored public key block.
    pub fn public_keys(&self) -> Result<Vec<String>> {
        let mut c = self.command();
        c.args(["-qa", "gpg-pubkey", "--qf", "%{DESCRIPTION}\\n"]);
        let out = self.run(c)?;
        if !out.status.success() {
            return Err(rpm_failed("-qa gpg-pubkey", &out));
        }
        const END: &str = "-----END PGP PUBLIC KEY BLOCK-----";
        let text = String::from_utf8_lossy(&out.stdout);
        Ok(text
            .split_inclusive(END)
            .filter_map(|b| {
                b.find("-----BEGIN PGP PUBLIC KEY BLOCK-----")
                    .map(|i| &b[i..])
            })
            .filter(|b| b.ends_with(END))
            .map(|b| format!("{b}\n"))
            .collect())
    }
}
