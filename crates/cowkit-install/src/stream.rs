//! Install from a plain `.rpm`: decompress the payload once, write each
//! file as it streams past, verified against its header digest before it
//! is renamed into place. No temporary cpio archive.

use std::fs::File;
use std::io::{BufReader, Read, Write};

use cowkit_archive::payload::{read_payload, PayloadError};
use cowkit_archive::rpm::Package;
use cowkit_fs::root::Root;
use cowkit_fs::IoError;

use crate::target::Target;
use crate::{finish, Error, Options, Owners, Progress, Result, Summary};

const CHUNK: usize = 256 * 1024;

pub(crate) fn install(
    root: &Root,
    owners: &Owners,
    file: File,
    path: &std::path::Path,
    opts: &Options,
    progress: &dyn Progress,
) -> Result<Summary> {
    let mut input = BufReader::with_capacity(CHUNK, file);
    let pkg = Package::read(&mut input)?;
    crate::check_expected(&pkg, path, opts)?;
    let files = pkg.files()?;
    let mut target =
        Target::new(root, owners, progress, opts.gate.as_ref()).without_caps(opts.nocaps);
    let places = target.prepare(&files, &opts.rename, &opts.skip)?;
    let mut s = Summary::default();
    let mut buf = vec![0u8; CHUNK];
    read_payload(&pkg, &files, input, |entry| -> Result<()> {
        let file = entry.file;
        // The content arrives with `file`; it goes to the first member of
        // its hardlink set that is installed (rpm's actions may skip some).
        let mut live: Vec<u32> = std::iter::once(file.index)
            .chain(entry.links.iter().copied().filter(|&m| m != file.index))
            .filter(|&m| places[m as usize].is_some())
            .collect();
        if live.is_empty() {
            // Not installed: read (and verified) all the same.
            entry.finish()?;
            return Ok(());
        }
        let head = live.remove(0);
        let place = places[head as usize].as_ref().expect("installed");
        let file = &files.files[head as usize];
        // rpm's touch: the file on disk is the package's already.
        if live.is_empty() && opts.touch.contains(&head) && target.touch(file, place)? {
            entry.finish()?;
            s.files += 1;
            s.touched += 1;
            progress.on_file();
            return Ok(());
        }
        target.regular(file, place, |dst, dst_path| {
            let mut dst = dst;
            loop {
                let n = match entry.read(&mut buf) {
                    Ok(0) => break,
                    Ok(n) => n,
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                    // The typed cause (digest mismatch, damaged archive)
                    // is what read_payload returns.
                    Err(source) => {
                        return Err(Error::from(IoError::new(
                            "read the payload for",
                            dst_path.to_path_buf(),
                            source,
                        )))
                    }
                };
                dst.write_all(&buf[..n]).map_err(|source| {
                    Error::from(IoError::new("write", dst_path.to_path_buf(), source))
                })?;
                progress.on_bytes(n as u64);
            }
            // Verified before the file gets its real name.
            entry.finish()?;
            Ok(())
        })?;
        s.files += 1;
        progress.on_file();
        s.tally.record_written(file.size);
        // Every other installed member is linked to it.
        for &m in &live {
            target.hardlink(place, places[m as usize].as_ref().expect("installed"))?;
            s.files += 1;
            progress.on_file();
            s.hardlinks += 1;
        }
        Ok(())
    })
    .map_err(|e| match e {
        PayloadError::Archive(e) => Error::Package(e),
        PayloadError::Visit(e) => e,
    })?;
    finish(&mut target, &files, &places, opts, &mut s, false)?;
    Ok(s)
}
