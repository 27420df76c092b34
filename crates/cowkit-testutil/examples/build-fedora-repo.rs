//! Build the v1 (install) packages of `cowkit_testutil::fedora` into
//! `DIR/repo` for `bench/image-build.sh`, each with `FILES` extra files of
//! `MIB` MiB under `/usr/share/bench-payload/<name>/` (0 0: none), and
//! print the package paths. The payload exists only here, in the
//! benchmark, not in the test fixture; it is generated deterministically
//! (a fixed xorshift stream written as hex digits, so zstd halves it).
//!
//! ```sh
//! cargo run --release -p cowkit-testutil --example build-fedora-repo -- /var/tmp/x 4 4 w3.zstdio
//! ```

use std::io::Write;
use std::path::{Path, PathBuf};

/// Changelog line of the v2-only specs (see `fedora.rs`): those are left out.
const V2_MARK: &str = "* Fri Jan 02 2015";

fn payload_file(path: &Path, seed: u64, bytes: usize) {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut out = std::io::BufWriter::new(std::fs::File::create(path).expect("payload file"));
    let hex = b"0123456789abcdef";
    let mut buf = vec![0u8; 1 << 16];
    let mut left = bytes;
    while left > 0 {
        for chunk in buf.chunks_mut(16) {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            for (i, b) in chunk.iter_mut().enumerate() {
                *b = hex[((x >> (4 * i)) & 15) as usize];
            }
        }
        let n = left.min(buf.len());
        out.write_all(&buf[..n]).unwrap();
        left -= n;
    }
}

/// The spec with the payload added: copied in `%install`, listed in `%files`.
fn with_payload(spec: &str, name: &str, src: &Path, files: usize) -> String {
    if files == 0 {
        return spec.to_string();
    }
    let dst = format!("/usr/share/bench-payload/{name}");
    let install = format!(
        "\nmkdir -p \"$B{dst}\"\ncp -p {}/* \"$B{dst}/\"\n%files\n{dst}\n",
        src.display()
    );
    assert!(spec.contains("\n%files\n"), "no %files in {name}");
    spec.replacen("\n%files\n", &install, 1)
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.len() != 4 {
        eprintln!("usage: build-fedora-repo DIR FILES MIB PAYLOAD_COMPRESSOR");
        std::process::exit(2)
    }
    let dir = PathBuf::from(&args[0]);
    let files: usize = args[1].parse().expect("FILES");
    let mib: usize = args[2].parse().expect("MIB");
    let specs: Vec<(String, String)> = cowkit_testutil::fedora::specs()
        .into_iter()
        .filter(|(_, s)| !s.contains(V2_MARK))
        .collect();
    assert_eq!(specs.len(), cowkit_testutil::fedora::INSTALL.len());
    let repo = dir.join("repo");
    std::fs::create_dir_all(&repo).expect("cannot create DIR/repo");
    let jobs: Vec<(String, String)> = specs
        .iter()
        .enumerate()
        .map(|(k, (file, spec))| {
            let name = spec
                .lines()
                .next()
                .and_then(|l| l.strip_prefix("Name: "))
                .expect("Name: line")
                .to_string();
            let src = dir.join("payload").join(&name);
            std::fs::create_dir_all(&src).unwrap();
            // Both arches of a multilib pair get the same payload (a path
            // they share must be the same file, as their `%license` is).
            let k = specs
                .iter()
                .position(|(_, s)| s.starts_with(&format!("Name: {name}\n")))
                .unwrap_or(k);
            for i in 0..files {
                let seed = (k * 1000 + i + 1) as u64;
                payload_file(&src.join(format!("data-{i}.bin")), seed, mib << 20);
            }
            (file.clone(), with_payload(spec, &name, &src, files))
        })
        .collect();
    let next = std::sync::atomic::AtomicUsize::new(0);
    std::thread::scope(|s| {
        for _ in 0..2 {
            s.spawn(|| loop {
                let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let Some((file, spec)) = jobs.get(i) else {
                    break;
                };
                // `<name>-<version>-<release>.<arch>.rpm`: an arch package
                // is built with `rpmbuild --target`.
                let arch = file.trim_end_matches(".rpm").rsplit('.').next();
                let target = arch.filter(|a| *a != "noarch");
                cowkit_testutil::rpm::rpmbuild_for(spec, &args[3], target, &repo.join(file));
            });
        }
    });
    for (file, _) in &jobs {
        println!("{}", repo.join(file).display());
    }
}
