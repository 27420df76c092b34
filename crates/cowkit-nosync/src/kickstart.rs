//! A kickstart snippet that installs the shim in an Anaconda installer
//! environment, as the reference `nosync.so` did, with nothing but bash
//! builtins, `printf` and `gzip`.
//!
//! `%pre` writes the gzip-compressed shim with `printf '\xHH…'` lines,
//! decompresses it with `gzip -d` to `/usr/lib/libcowkit-nosync-<hash>.so`
//! (mode 0644 from `umask 022`) unless it is already there, and appends its
//! path to `/etc/ld.so.preload` unless listed. `%post --nochroot` takes the
//! line out again, deletes the shim, and runs `sync`, which now reaches the
//! kernel: the installed system is durable before the reboot.
//!
//! Both sections take their paths below `${COWKIT_NOSYNC_ROOT:-}` (empty in
//! a real installation), so they can be tried in a scratch directory.

use std::fmt::Write as _;
use std::io::Write as _;

use crate::preload::shim_path;
use crate::shim::SHIM;

/// Bytes of compressed shim per `printf` line.
const CHUNK: usize = 64;

/// The shim, gzip-compressed (level 9, no name, mtime 0: deterministic).
pub fn compressed() -> Vec<u8> {
    let mut enc = flate2::GzBuilder::new()
        .mtime(0)
        .write(Vec::new(), flate2::Compression::best());
    enc.write_all(SHIM).expect("writing to a Vec cannot fail");
    enc.finish().expect("writing to a Vec cannot fail")
}

/// The `%pre` and `%post` sections.
pub fn snippet() -> String {
    let so = shim_path();
    let gz = compressed();
    let mut s = String::new();
    let _ = writeln!(
        s,
        "%pre --interpreter=/bin/bash --log=/tmp/cowkit-nosync-pre.log\n\
         # cowkit nosync {ver}: sync calls become no-ops for every process started\n\
         # from here on (/etc/ld.so.preload); %post below removes it and syncs.\n\
         # Shim: {len} bytes, sha256 {sha}, {gzlen} bytes gzip-compressed.\n\
         set -eu\n\
         r=${{COWKIT_NOSYNC_ROOT:-}}\n\
         so={so}\n\
         umask 022\n\
         if [[ ! -e $r$so ]]; then\n  : > \"$r$so.gz\"",
        ver = env!("CARGO_PKG_VERSION"),
        len = SHIM.len(),
        sha = crate::shim::digest(),
        gzlen = gz.len(),
    );
    for chunk in gz.chunks(CHUNK) {
        s.push_str("  printf '");
        for b in chunk {
            let _ = write!(s, "\\x{b:02x}");
        }
        s.push_str("' >> \"$r$so.gz\"\n");
    }
    let _ = writeln!(
        s,
        "  gzip -d -f \"$r$so.gz\"\n\
         fi\n\
         found= nl=\n\
         if [[ -e $r/etc/ld.so.preload ]]; then\n  \
           while IFS= read -r line || {{ [[ -n $line ]] && nl=1; }}; do\n    \
             [[ $line == \"$so\" ]] && found=1\n  \
           done < \"$r/etc/ld.so.preload\"\n\
         fi\n\
         if [[ -z $found ]]; then\n  \
           if [[ -n $nl ]]; then printf '\\n' >> \"$r/etc/ld.so.preload\"; fi\n  \
           printf '%s\\n' \"$so\" >> \"$r/etc/ld.so.preload\"\n\
         fi\n\
         %end\n\
         \n\
         %post --nochroot --interpreter=/bin/bash --log=/tmp/cowkit-nosync-post.log\n\
         # cowkit nosync: unregister the shim, then make the installation durable.\n\
         r=${{COWKIT_NOSYNC_ROOT:-}}\n\
         so={so}\n\
         if [[ -e $r/etc/ld.so.preload ]]; then\n  \
           keep=()\n  \
           while IFS= read -r line || [[ -n $line ]]; do\n    \
             [[ $line == \"$so\" ]] || keep+=(\"$line\")\n  \
           done < \"$r/etc/ld.so.preload\"\n  \
           if ((${{#keep[@]}})); then printf '%s\\n' \"${{keep[@]}}\" > \"$r/etc/ld.so.preload\"\n  \
           else : > \"$r/etc/ld.so.preload\"; fi\n\
         fi\n\
         rm -f \"$r$so\"\n\
         sync\n\
         %end"
    );
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_snippet_round_trips_the_compressed_shim() {
        let s = snippet();
        assert!(s.starts_with("%pre "));
        assert_eq!(s.matches("%end").count(), 2);
        let mut bytes = Vec::new();
        for line in s.lines().filter(|l| l.starts_with("  printf '\\x")) {
            let hex = line
                .trim_start_matches("  printf '")
                .split('\'')
                .next()
                .unwrap();
            for h in hex.split("\\x").skip(1) {
                bytes.push(u8::from_str_radix(h, 16).unwrap());
            }
        }
        assert_eq!(bytes, compressed());
        let mut out = Vec::new();
        std::io::Read::read_to_end(&mut flate2::read::GzDecoder::new(&bytes[..]), &mut out)
            .unwrap();
        assert_eq!(out, SHIM);
    }
}
