//! The store's side of [`crate::fleet`]: the locks of uploads and keys,
//! and the sweep of what dead gateways left.

use std::os::fd::{AsFd, OwnedFd};
use std::path::Path;
use std::time::SystemTime;

use rustix::fs::AtFlags;
use rustix::io::Errno;

use super::{mtime, Store};
use crate::error::{io, Result};
use crate::fleet::{is_instance_id, lock, Held, Slot, Swept};
use crate::fsutil;
use crate::names;

impl Store {
    /// Take the lock of upload `id`, waiting for it.
    pub(crate) fn lock_upload(&self, id: &str) -> Result<Held> {
        Ok(
            lock(self.sys.as_fd(), &self.sys_path(), Slot::Upload, id, true)?
                .expect("a waiting lock is granted"),
        )
    }

    /// Take the lock of `bucket/key`, waiting for it.
    pub(crate) fn lock_object(&self, bucket: &str, key: &str) -> Result<Held> {
        Ok(lock(
            self.sys.as_fd(),
            &self.sys_path(),
            Slot::Object,
            &format!("{bucket}/{key}"),
            true,
        )?
        .expect("a waiting lock is granted"))
    }

    /// Remove what interrupted work left behind (see the module's text).
    /// Safe while other gateways run on the same root: it only takes what
    /// it can lock.
    pub fn sweep(&self) -> Result<Swept> {
        let mut s = Swept::default();
        let tmp_all = self.sys_path().join("tmp");
        for (name, _) in fsutil::read_names(self.tmp_all.as_fd(), &tmp_all)? {
            if name == self.instance {
                continue;
            }
            if is_instance_id(&name) {
                let Some(_held) = lock(
                    self.sys.as_fd(),
                    &self.sys_path(),
                    Slot::Instance,
                    &name,
                    false,
                )?
                else {
                    continue;
                };
                cowkit_fs::dir::remove_tree(&self.tmp_all, &name, &tmp_all.join(&name))?;
                s.dead_tmp += 1;
            } else {
                // Older versions wrote their temporary files directly in
                // tmp/; nothing does now.
                cowkit_fs::dir::remove_tree(&self.tmp_all, &name, &tmp_all.join(&name))?;
                s.dead_tmp += 1;
            }
        }
        let up = self.sys_path().join("uploads");
        let now = SystemTime::now();
        for (id, _) in fsutil::read_names(self.uploads.as_fd(), &up)? {
            if !names::is_upload_id(&id) {
                continue;
            }
            let Some(_held) = lock(self.sys.as_fd(), &self.sys_path(), Slot::Upload, &id, false)?
            else {
                continue;
            };
            let Some(dir) = fsutil::open_dir_opt(self.uploads.as_fd(), &id, &up.join(&id))? else {
                continue;
            };
            if cowkit_fs::dir::stat_at(&dir, "upload.json")
                .map_err(|e| io("stat", up.join(&id).join("upload.json"), e))?
                .is_none()
            {
                self.discard_upload(&id)?;
                s.incomplete += 1;
                continue;
            }
            let Some(st) = cowkit_fs::dir::stat_at(&dir, "completed.json")
                .map_err(|e| io("stat", up.join(&id).join("completed.json"), e))?
            else {
                continue;
            };
            let age = now.duration_since(mtime(&st)).unwrap_or_default();
            if age > self.opts.completed_ttl {
                self.discard_upload(&id)?;
                s.expired += 1;
            } else if self.clean_completed(&dir, &up.join(&id))? > 0 {
                s.completed_cleaned += 1;
            }
        }
        if s != Swept::default() {
            log::info!(
                "sweep: {} dead temporary directories, {} completed uploads cleaned, {} expired, {} incomplete",
                s.dead_tmp,
                s.completed_cleaned,
                s.expired,
                s.incomplete
            );
        }
        Ok(s)
    }

    /// Remove every file of a completed upload but `upload.json` and
    /// `completed.json`; returns how many. The caller holds its lock.
    pub(crate) fn clean_completed(&self, dir: &OwnedFd, path: &Path) -> Result<usize> {
        let mut n = 0;
        for (name, _) in fsutil::read_names(dir.as_fd(), path)? {
            if name == "upload.json" || name == "completed.json" {
                continue;
            }
            match rustix::fs::unlinkat(dir, name.as_str(), AtFlags::empty()) {
                Ok(()) => n += 1,
                Err(Errno::NOENT) => {}
                Err(e) => return Err(io("remove", path.join(&name), e)),
            }
            if n == 1 {
                crate::fault::point("complete-cleaning");
            }
        }
        Ok(n)
    }

    /// Remove upload `id`: its directory leaves `uploads/` in one rename
    /// (into this gateway's temporary directory), then its files go. A
    /// crash in between leaves them where the sweep finds them. The caller
    /// holds its lock.
    pub(crate) fn discard_upload(&self, id: &str) -> Result<()> {
        let up = self.sys_path().join("uploads");
        match rustix::fs::renameat(&self.uploads, id, &self.tmp, id) {
            Ok(()) => {}
            Err(Errno::NOENT) => return Ok(()),
            Err(e) => return Err(io("move away", up.join(id), e)),
        }
        if self.opts.fsync {
            fsutil::sync_dir(&self.uploads, &up)?;
        }
        crate::fault::point("upload-discarding");
        let moved = self.tmp_path().join(id);
        if let Some(dir) = fsutil::open_dir_opt(self.tmp.as_fd(), id, &moved)? {
            for (i, (name, _)) in fsutil::read_names(dir.as_fd(), &moved)?
                .into_iter()
                .enumerate()
            {
                match rustix::fs::unlinkat(&dir, name.as_str(), AtFlags::empty()) {
                    Ok(()) | Err(Errno::NOENT) => {}
                    Err(e) => return Err(io("remove", moved.join(&name), e)),
                }
                if i == 0 {
                    crate::fault::point("upload-discarded-one");
                }
            }
        }
        Ok(cowkit_fs::dir::remove_tree(&self.tmp, id, &moved)?)
    }
}
