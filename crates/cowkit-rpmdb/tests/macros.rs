//! A root's rpm macro files are the packages' to write (issue 25): the
//! expander that finds `%_dbpath` in them is bounded in the size of what
//! it reads, the length of its result and the references it follows, and
//! past a bound it refuses to guess the database path. The committed
//! corpus of the `macros` fuzz target is replayed here too.

use std::path::Path;
use std::process::Command;

use cowkit_fs::root::Root;
use cowkit_rpmdb::{locate, Error, Source};

/// `%_dbpath` built from 12 levels of definitions (within the depth
/// limit of 16), each naming the next 12 times: 12^12 references, a
/// 0.7 KB file.
fn bomb() -> String {
    let mut s = String::from("%_dbpath /var/lib/%l0\n");
    for i in 0..12 {
        s.push_str(&format!("%l{i} {}\n", format!("%l{}", i + 1).repeat(12)));
    }
    s.push_str("%l12 x\n");
    s
}

fn root_with(files: &[(&str, &[u8])]) -> tempfile::TempDir {
    let d = tempfile::tempdir().unwrap();
    for (path, text) in files {
        let p = d.path().join(path);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }
    d
}

/// The exponential file, as a package would ship it into a fresh root:
/// `locate` says why it does not guess. Run in a child process held to
/// 1 GiB of address space and 30 s of CPU (the expander before the
/// bounds grew past both: the child then dies and this test fails).
#[test]
fn an_exponential_macro_file_is_refused() {
    const CHILD: &str = "COWKIT_TEST_MACRO_BOMB_CHILD";
    if std::env::var_os(CHILD).is_some() {
        let text = bomb();
        assert!(text.len() < 1024, "{}", text.len());
        let d = root_with(&[("etc/rpm/macros.bomb", text.as_bytes())]);
        let root = Root::open(d.path()).unwrap();
        match locate(&root, None) {
            Err(e) => println!("REFUSED: {e}"),
            Ok(db) => println!("LOCATED: {db:?}"),
        }
        return;
    }
    let out = Command::new("prlimit")
        .args(["--as=1073741824", "--cpu=30", "--"])
        .arg(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "an_exponential_macro_file_is_refused",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD, "1")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "the child failed ({}):\n{stdout}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    let line = stdout
        .lines()
        .find_map(|l| l.split_once("REFUSED: ").map(|(_, e)| e))
        .unwrap_or_else(|| panic!("not refused:\n{stdout}"));
    assert!(
        line.contains("`/etc/rpm/macros.bomb` `%_dbpath` expands to more than 4096 bytes"),
        "{line}"
    );
}

/// The result is bounded too (a long path from few references), and so
/// are the files: one past 1 MiB, or all of them past 8 MiB, is refused,
/// not cut short (its end might set `%_dbpath`).
#[test]
fn long_expansions_and_large_macro_files_are_refused() {
    let long = format!(
        "%a {}\n%_dbpath /%b%b%b%b%b%b%b%b\n%b %a%a%a%a\n",
        "x".repeat(200)
    );
    let d = root_with(&[("etc/rpm/macros", long.as_bytes())]);
    let e = locate(&Root::open(d.path()).unwrap(), None).unwrap_err();
    assert!(
        matches!(&e, Error::Macros { file, why } if file == "/etc/rpm/macros" && why.contains("more than 4096 bytes")),
        "{e}"
    );

    let mut big = vec![b'#'; (1 << 20) + 1];
    big.extend_from_slice(b"\n%_dbpath /elsewhere\n");
    let d = root_with(&[("usr/lib/rpm/macros", &big)]);
    let e = locate(&Root::open(d.path()).unwrap(), None).unwrap_err();
    assert!(
        matches!(&e, Error::Macros { file, why } if file == "/usr/lib/rpm/macros" && why.contains("larger than 1048576 bytes")),
        "{e}"
    );

    let part = vec![b'#'; 1 << 20];
    let names: Vec<String> = (0..9)
        .map(|i| format!("usr/lib/rpm/macros.d/macros.{i}"))
        .collect();
    let files: Vec<(&str, &[u8])> = names.iter().map(|n| (n.as_str(), &part[..])).collect();
    let d = root_with(&files);
    let e = locate(&Root::open(d.path()).unwrap(), None).unwrap_err();
    assert!(
        matches!(&e, Error::Macros { why, .. } if why.contains("past 8388608 bytes")),
        "{e}"
    );

    // Within the bounds, as before.
    let d = root_with(&[(
        "etc/rpm/macros.db",
        b"%_a /usr\n%_b %_a%{_a}\n%_dbpath %_b/lib/sysimage/rpm\n",
    )]);
    let db = locate(&Root::open(d.path()).unwrap(), None).unwrap();
    assert_eq!(db.path, "/usr/usr/lib/sysimage/rpm");
    assert_eq!(
        db.source,
        Source::RootMacros("/etc/rpm/macros.db".to_string())
    );
}

/// The `macros` fuzz target's committed corpus (`fuzz/corpus/macros/`),
/// replayed through its entry point.
#[test]
fn fuzz_corpus_macros() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/corpus/macros");
    let mut n = 0;
    for e in std::fs::read_dir(dir).unwrap() {
        let data = std::fs::read(e.unwrap().path()).unwrap();
        cowkit_rpmdb::fuzzing::macros(&data);
        n += 1;
    }
    assert!(n > 0);
}
