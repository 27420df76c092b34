//! File capabilities checked against libcap's own tools (`setcap`, `getcap`
//! and `capsh` from the `libcap2-bin` package), as root: the bytes
//! `from_text` makes are the bytes `setcap` writes, the texts `setcap`
//! refuses are refused with the right error, and `to_text` reads what
//! `setcap` wrote the way `getcap` does.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::Command;

use cowkit_fs::caps::{self, decode, from_text, to_text, CapSets, CapsError, XATTR_NAME};
use cowkit_fs::meta::{list_xattrs, set_xattr, xattr};
use cowkit_fs::Handle;
use cowkit_testutil::{scratch, Fs, TempDir};

/// Texts `setcap` accepts and that grant something.
const ACCEPTED: &[&str] = &[
    "cap_net_raw=ep",
    "cap_net_admin,cap_net_raw=ep",
    "cap_sys_admin+eip",
    "cap_chown=eip",
    "cap_chown=p",
    "cap_chown=i",
    "cap_chown=ie",
    "cap_chown=p+e",
    "cap_chown+p+e",
    "cap_chown=p+e-e+i",
    "cap_chown=ep cap_kill=ep",
    "cap_chown=ep\tcap_kill=i+ep",
    "cap_chown=pi cap_kill=pi cap_net_raw=ip",
    "cap_chown=-ep cap_kill=p",
    "13=ep",
    "0x0d=ep",
    "0XD,0xe=ep",
    // Octal, as C's `strtoul` reads it: 11, `cap_net_broadcast`.
    "013=ep",
    "cap_chown,13=ep",
    "cap_bpf,cap_perfmon,cap_checkpoint_restore=ep",
    "40=ep",
    "41=ep",
    "63=i",
    "077=p",
    "CAP_NET_RAW=ep",
    "Cap_Net_Raw=ep",
    "cap_CHOWN=i",
    "all=ep",
    "ALL=p",
    "cap_chown,all=ep",
    "=ep",
    "=i",
    "all=ep cap_chown-p",
    "=p cap_chown-p",
    "=ep cap_setfcap-ep 63+ep",
    "63=ep =",
    "=p 63=p =i",
    // Effective capabilities that are neither permitted nor inheritable
    // are accepted, and dropped.
    "cap_chown=ep cap_kill=e",
    " cap_chown=ep ",
    "\u{b}cap_chown=ep\r",
    "cap_chown=ep\n cap_kill=i+ep",
];

/// Texts `setcap` accepts that grant nothing: it writes an all-zero value
/// (with the effective flag when the effective set is not empty).
const NOTHING: &[&str] = &[
    "",
    " ",
    "=",
    "cap_chown=",
    "cap_chown=e",
    "=e",
    "cap_chown=ep cap_chown-ep",
    "cap_chown+e-e",
    "=i all-i",
    "cap_chown=ep =",
    "cap_chown=-ep",
];

/// A libcap tool; a missing one fails the test with how to install it.
fn tool(name: &str) -> PathBuf {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain(["/usr/sbin".into(), "/sbin".into()])
        .map(|d| d.join(name))
        .find(|p| p.is_file())
        .unwrap_or_else(|| {
            panic!(
                "`{name}` not found: install it with \
                 `apt-get install -y --no-install-recommends libcap2-bin`"
            )
        })
}

/// A new empty file in `dir`.
fn fresh(dir: &Path, n: usize) -> PathBuf {
    let path = dir.join(format!("f{n}"));
    File::create(&path).unwrap();
    path
}

/// `setcap ARGS... PATH`; its stderr on failure.
fn setcap(args: &[&str], path: &Path) -> Result<(), String> {
    let out = Command::new(tool("setcap"))
        .args(args)
        .arg(path)
        .output()
        .unwrap();
    if out.status.success() {
        Ok(())
    } else {
        Err(String::from_utf8_lossy(&out.stderr).into_owned())
    }
}

/// What `setcap TEXT` writes on a new file; panics if it refuses.
fn setcap_value(dir: &Path, n: usize, text: &str) -> (PathBuf, Vec<u8>) {
    let path = fresh(dir, n);
    setcap(&[text], &path).unwrap_or_else(|e| panic!("setcap {text:?} failed: {e}"));
    let value = read_caps(&path).unwrap_or_else(|| panic!("setcap {text:?} wrote nothing"));
    (path, value)
}

/// Whether `setcap TEXT` refuses the text.
fn setcap_refuses(dir: &Path, n: usize, text: &str) -> bool {
    setcap(&[text], &fresh(dir, n)).is_err()
}

/// The `security.capability` value of `path`, through `meta::list_xattrs`.
fn read_caps(path: &Path) -> Option<Vec<u8>> {
    let f = File::open(path).unwrap();
    list_xattrs(Handle::new(&f, path))
        .unwrap()
        .into_iter()
        .find(|x| x.name == XATTR_NAME)
        .map(|x| x.value)
}

/// The capability text `getcap` prints for `path`, if any.
fn getcap(path: &Path) -> Option<String> {
    let out = Command::new(tool("getcap")).arg(path).output().unwrap();
    assert!(out.status.success(), "getcap {}: {out:?}", path.display());
    let line = String::from_utf8(out.stdout).unwrap();
    let line = line.trim_end();
    if line.is_empty() {
        return None;
    }
    let prefix = format!("{} ", path.display());
    let text = line
        .strip_prefix(&prefix)
        .unwrap_or_else(|| panic!("getcap printed {line:?}"));
    Some(text.to_owned())
}

/// The sets the kernel sees once `sets` is stored: one effective flag, so
/// the effective set becomes every permitted and inheritable capability,
/// or nothing.
fn stored(sets: CapSets) -> CapSets {
    let effective = if sets.effective != 0 {
        sets.permitted | sets.inheritable
    } else {
        0
    };
    CapSets { effective, ..sets }
}

fn parse(text: &str) -> CapSets {
    CapSets::parse(text).unwrap_or_else(|e| panic!("{text:?}: {e}"))
}

fn tmp() -> TempDir {
    tempfile::tempdir().unwrap()
}

/// `setcap` as root outside a user namespace writes revision 2; inside one
/// it would write revision 3 with the namespace's root, which `from_text`
/// does not make: compare the sets then.
fn assert_same_as_setcap(text: &str, ours: &[u8], theirs: &[u8]) {
    let revision = decode(theirs).unwrap().revision;
    if revision == 2 {
        assert_eq!(ours, theirs, "{text:?}: bytes differ from setcap's");
    } else {
        assert_eq!(revision, 3, "{text:?}: setcap wrote {theirs:02x?}");
        assert_eq!(
            decode(ours).unwrap().sets,
            decode(theirs).unwrap().sets,
            "{text:?}"
        );
    }
}

#[test]
fn accepted_texts_encode_byte_for_byte_like_setcap() {
    let dir = tmp();
    for (n, text) in ACCEPTED.iter().enumerate() {
        let (_, theirs) = setcap_value(dir.path(), n, text);
        let ours = from_text(text)
            .unwrap_or_else(|e| panic!("{text:?}: {e}"))
            .unwrap_or_else(|| panic!("{text:?} gave no value"));
        assert_eq!(ours.len(), 20, "{text:?}");
        assert_same_as_setcap(text, &ours, &theirs);
        assert_same_as_setcap(text, &parse(text).to_xattr().unwrap(), &theirs);
    }
}

#[test]
fn texts_granting_nothing_give_no_value_but_encode_like_setcap() {
    let dir = tmp();
    for (n, text) in NOTHING.iter().enumerate() {
        assert_eq!(from_text(text), Ok(None), "{text:?}");
        let (_, theirs) = setcap_value(dir.path(), n, text);
        assert!(decode(&theirs).unwrap().sets.grants_nothing(), "{text:?}");
        assert_same_as_setcap(text, &parse(text).to_xattr().unwrap(), &theirs);
    }
}

#[test]
fn unknown_names_are_refused_like_setcap() {
    let dir = tmp();
    let cases = [
        ("cap_nonsense=ep", "cap_nonsense"),
        ("chown=ep", "chown"),
        ("cap_all=ep", "cap_all"),
        ("cap_net=ep", "cap_net"),
        ("cap_chownx=ep", "cap_chownx"),
        ("cap_chown,cap_bogus+i", "cap_bogus"),
        ("64=ep", "64"),
        ("0100=ep", "0100"),
        ("18446744073709551629=ep", "18446744073709551629"),
        ("1a=ep", "1a"),
        ("08=ep", "08"),
        ("0x=ep", "0x"),
    ];
    for (n, (text, name)) in cases.into_iter().enumerate() {
        let err = from_text(text).unwrap_err();
        assert_eq!(
            err,
            CapsError::UnknownName {
                name: name.to_owned(),
                text: text.to_owned()
            },
            "{text:?}"
        );
        assert!(err.to_string().contains(&format!("`{name}`")), "{err}");
        assert!(setcap_refuses(dir.path(), n, text), "setcap took {text:?}");
    }
}

#[test]
fn syntax_errors_are_refused_like_setcap_with_their_position() {
    let dir = tmp();
    let cases = [
        ("cap_chown?ep", 9),
        ("cap_chown", 9),
        ("all", 3),
        ("cap_chown = ep", 9),
        ("cap_chown+", 10),
        ("cap_chown-", 10),
        ("cap_chown=ep-", 13),
        ("cap_chown=ep+", 13),
        ("+ep", 0),
        ("=+ep", 1),
        ("=e+p", 2),
        ("=ep-e", 3),
        ("=ep,", 3),
        ("cap_chown=EP", 10),
        ("cap_chown=ex", 11),
        ("cap_chown=e=p", 11),
        ("cap_chown+p=", 11),
        ("cap_chown=pe=i", 12),
        ("cap_chown,=ep", 10),
        (",cap_chown=ep", 0),
        ("cap_chown,,cap_kill=ep", 10),
        ("cap_chown=ep,cap_kill=ep", 12),
        ("cap_chown=ep;", 12),
        ("cap_chown=ep cap_kill", 21),
        ("cap_chown=\u{e9}p", 10),
    ];
    for (n, (text, pos)) in cases.into_iter().enumerate() {
        match from_text(text) {
            Err(CapsError::Syntax {
                text: t, pos: p, ..
            }) => {
                assert_eq!((t.as_str(), p), (text, pos), "{text:?}")
            }
            other => panic!("{text:?}: {other:?}"),
        }
        assert!(setcap_refuses(dir.path(), n, text), "setcap took {text:?}");
    }
    // `setcap` would read these as options.
    for text in ["-ep", "-cap_chown=ep"] {
        assert!(matches!(
            from_text(text),
            Err(CapsError::Syntax { pos: 0, .. })
        ));
    }
}

#[test]
fn effective_sets_one_flag_cannot_express_are_refused_like_setcap() {
    let dir = tmp();
    let bit = |name| 1u64 << caps::number(name).unwrap();
    let all = (1u64 << 41) - 1;
    let cases = [
        ("cap_chown=p cap_kill=ep", bit("cap_chown")),
        ("= cap_chown+ep cap_kill+i", bit("cap_kill")),
        ("cap_chown=i cap_kill=e", bit("cap_chown")),
        ("cap_chown=pi cap_kill=e", bit("cap_chown")),
        ("cap_chown=epi cap_kill=i", bit("cap_kill")),
        ("all=p cap_chown+e", all & !bit("cap_chown")),
        ("all=e 41=p", 1 << 41),
    ];
    for (n, (text, missing)) in cases.into_iter().enumerate() {
        let sets = parse(text);
        assert_eq!(
            from_text(text),
            Err(CapsError::EffectiveMismatch { sets, missing }),
            "{text:?}"
        );
        assert!(setcap_refuses(dir.path(), n, text), "setcap took {text:?}");
    }
}

#[test]
fn to_text_round_trips_the_sets() {
    for text in ACCEPTED {
        let value = from_text(text).unwrap().unwrap();
        let decoded = decode(&value).unwrap();
        assert_eq!((decoded.revision, decoded.rootid), (2, None));
        assert_eq!(decoded.sets, stored(parse(text)), "{text:?}");
        let back = to_text(&value).unwrap();
        assert_eq!(parse(&back), decoded.sets, "{text:?} -> {back:?}");
        assert_eq!(from_text(&back).unwrap().as_ref(), Some(&value), "{back:?}");
    }
}

#[test]
fn to_text_of_what_setcap_wrote_agrees_with_getcap() {
    let dir = tmp();
    for (n, text) in ACCEPTED.iter().chain(NOTHING).enumerate() {
        let (path, value) = setcap_value(dir.path(), n, text);
        let theirs = getcap(&path).unwrap_or_else(|| panic!("getcap shows nothing for {text:?}"));
        let ours = to_text(&value).unwrap();
        assert_eq!(
            parse(&ours),
            parse(&theirs),
            "{text:?}: {ours:?} vs getcap {theirs:?}"
        );
        assert_eq!(parse(&ours), stored(parse(text)), "{text:?}: {ours:?}");
    }
}

#[test]
fn value_set_with_fsetxattr_shows_in_getcap() {
    let mut dirs = vec![(None, tmp())];
    dirs.extend(
        Fs::MAIN
            .into_iter()
            .filter_map(|fs| Some((Some(fs), scratch(fs)?))),
    );
    for (fs, dir) in &dirs {
        for (n, text) in ACCEPTED.iter().enumerate() {
            let value = from_text(text).unwrap().unwrap();
            let path = fresh(dir.path(), n);
            let f = File::options().write(true).open(&path).unwrap();
            set_xattr(Handle::new(&f, &path), &xattr(XATTR_NAME, value.clone())).unwrap();
            assert_eq!(read_caps(&path), Some(value), "{fs:?} {text:?}");
            let shown = getcap(&path).unwrap_or_else(|| panic!("{fs:?} {text:?}: no caps"));
            assert_eq!(
                parse(&shown),
                stored(parse(text)),
                "{fs:?} {text:?}: getcap {shown:?}"
            );
        }
    }
}

#[test]
fn revision_3_from_setcap_n_decodes_with_its_rootid() {
    let dir = tmp();
    let path = fresh(dir.path(), 0);
    setcap(&["-n", "1000", "cap_net_raw,cap_bpf=ep"], &path).unwrap();
    let value = read_caps(&path).unwrap();
    assert_eq!(value.len(), 24);
    let decoded = decode(&value).unwrap();
    assert_eq!((decoded.revision, decoded.rootid), (3, Some(1000)));
    assert_eq!(decoded.sets, stored(parse("cap_net_raw,cap_bpf=ep")));
    assert_eq!(to_text(&value).unwrap(), "cap_net_raw,cap_bpf=ep");
    assert_eq!(parse(&getcap(&path).unwrap()), decoded.sets);
    // Same sets as the revision 2 value, which differs in the magic word
    // and the root uid.
    let v2 = from_text("cap_net_raw,cap_bpf=ep").unwrap().unwrap();
    assert_eq!(v2[4..20], value[4..20]);
}

fn words(words: &[u32]) -> Vec<u8> {
    words.iter().flat_map(|w| w.to_le_bytes()).collect()
}

#[test]
fn revision_1_decodes_and_bad_values_are_refused() {
    let v1 = words(&[0x0100_0001, 1 << 13, 1 << 5]);
    let decoded = decode(&v1).unwrap();
    assert_eq!((decoded.revision, decoded.rootid), (1, None));
    assert_eq!(decoded.sets, parse("cap_net_raw=ep cap_kill=ei"));
    assert_eq!(to_text(&v1).unwrap(), "cap_kill=ei cap_net_raw=ep");
    assert_eq!(
        to_text(&words(&[0x0100_0000, 1, 0])).unwrap(),
        "cap_chown=p"
    );
    // Flag bits the kernel does not know are ignored, as it does.
    assert_eq!(
        to_text(&words(&[0x0200_0102, 1, 0, 0, 0])).unwrap(),
        "cap_chown=p"
    );

    let length = |len, revision| Err(CapsError::XattrLength { len, revision });
    assert_eq!(decode(&[]), length(0, None));
    assert_eq!(decode(&[0, 0, 0]), length(3, None));
    assert_eq!(
        decode(&words(&[0x0200_0001, 1, 0, 0, 0, 0])),
        length(24, Some(2))
    );
    assert_eq!(decode(&words(&[0x0200_0001, 1, 0])), length(12, Some(2)));
    assert_eq!(
        decode(&words(&[0x0100_0001, 1, 0, 0, 0])),
        length(20, Some(1))
    );
    assert_eq!(
        decode(&words(&[0x0300_0001, 1, 0, 0, 0])),
        length(20, Some(3))
    );
    let mut v2 = from_text("cap_chown=ep").unwrap().unwrap();
    v2.push(0);
    assert_eq!(decode(&v2), length(21, Some(2)));
    assert_eq!(
        to_text(&words(&[0x0400_0001, 1, 0, 0, 0])),
        Err(CapsError::XattrRevision { revision: 4 })
    );
    assert_eq!(
        decode(&words(&[0, 0, 0, 0, 0])),
        Err(CapsError::XattrRevision { revision: 0 })
    );
}

#[test]
fn names_and_numbers_match_capsh() {
    let out = Command::new(tool("capsh"))
        .arg("--decode=0x1ffffffffff")
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let out = String::from_utf8(out.stdout).unwrap();
    let (_, list) = out.trim().split_once('=').unwrap();
    let names: Vec<&str> = list.split(',').collect();
    assert_eq!(names.len() as u32, caps::LAST_CAP + 1, "{out}");
    for (n, name) in names.iter().enumerate() {
        assert_eq!(caps::name(n as u32), Some(*name));
        assert_eq!(caps::number(name), Some(n as u32));
        assert_eq!(caps::number(&name.to_uppercase()), Some(n as u32));
        assert_eq!(
            from_text(&format!("{name}=p")),
            from_text(&format!("{n}=p"))
        );
    }
    assert_eq!(caps::name(caps::LAST_CAP + 1), None);
    assert_eq!(caps::number("cap_nonsense"), None);
    assert_eq!(
        linux_raw_sys::general::XATTR_NAME_CAPS,
        format!("{XATTR_NAME}\0").as_bytes()
    );
}

#[test]
fn display_is_short_and_reads_back() {
    let cases = [
        ("", "="),
        ("=ep", "=ep"),
        ("all=eip", "=eip"),
        ("=ep 63+p", "=ep 63=p"),
        ("=ep cap_chown-ep", "cap_dac_override,cap_dac_read_search,cap_fowner,cap_fsetid,cap_kill,cap_setgid,cap_setuid,cap_setpcap,cap_linux_immutable,cap_net_bind_service,cap_net_broadcast,cap_net_admin,cap_net_raw,cap_ipc_lock,cap_ipc_owner,cap_sys_module,cap_sys_rawio,cap_sys_chroot,cap_sys_ptrace,cap_sys_pacct,cap_sys_admin,cap_sys_boot,cap_sys_nice,cap_sys_resource,cap_sys_time,cap_sys_tty_config,cap_mknod,cap_lease,cap_audit_write,cap_audit_control,cap_setfcap,cap_mac_override,cap_mac_admin,cap_syslog,cap_wake_alarm,cap_block_suspend,cap_audit_read,cap_perfmon,cap_bpf,cap_checkpoint_restore=ep"),
        ("cap_kill=p cap_chown=p 13=p", "cap_chown,cap_kill,cap_net_raw=p"),
        ("cap_chown=p cap_kill=ep", "cap_chown=p cap_kill=ep"),
        ("cap_chown=e", "cap_chown=e"),
        ("41,63=i 0=pie", "cap_chown=eip 41,63=i"),
    ];
    for (text, shown) in cases {
        let sets = parse(text);
        assert_eq!(sets.to_string(), shown, "{text:?}");
        assert_eq!(parse(shown), sets, "{shown:?}");
    }
}
