//! The `owners` fuzz target's committed corpus (`fuzz/corpus/owners/`),
//! replayed through the function it fuzzes (`owners::parse`) on stable.

use std::path::Path;

use cowkit_install::owners::parse;

#[test]
fn fuzz_corpus_owners() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/corpus/owners");
    let mut n = 0;
    for e in std::fs::read_dir(dir).unwrap() {
        let data = std::fs::read(e.unwrap().path()).unwrap();
        let _ = parse(&String::from_utf8_lossy(&data));
        n += 1;
    }
    assert!(n > 0);
}

#[test]
fn owners_parse_reads_names_and_ids() {
    let m = parse(
        "root:x:0:0::/root:/bin/sh\n# c\nnobody:x:65534:65534::/:/bin/false\n:x:5:\nbad:x:-1:\n",
    );
    assert_eq!(m.len(), 2);
    assert_eq!(m["nobody"], 65534);
}
