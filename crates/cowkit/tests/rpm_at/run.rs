//! The runner of rpm's scenarios: each on twin roots, every end held to
//! its table (see `rpm_at.rs`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use cowkit_testutil::{scratch, Fs};

use super::expected::Expect;
use super::harness::{build, build_key, run_scenario, Outcome, Scenario};

/// Run `f` over `items` on `jobs` threads; results in `items`' order.
fn parallel<T: Sync, R: Send>(items: &[T], jobs: usize, f: impl Fn(&T) -> R + Sync) -> Vec<R> {
    let next = Mutex::new(0usize);
    let out: Mutex<Vec<Option<R>>> = Mutex::new((0..items.len()).map(|_| None).collect());
    std::thread::scope(|s| {
        for _ in 0..jobs.max(1) {
            s.spawn(|| loop {
                let i = {
                    let mut n = next.lock().unwrap();
                    let i = *n;
                    *n += 1;
                    i
                };
                if i >= items.len() {
                    break;
                }
                let r = f(&items[i]);
                out.lock().unwrap()[i] = Some(r);
            });
        }
    });
    out.into_inner()
        .unwrap()
        .into_iter()
        .map(|r| r.expect("every item ran"))
        .collect()
}

fn outcome_word(o: &Outcome) -> &'static str {
    match o {
        Outcome::Equal => "equal",
        Outcome::Differs(_) => "differs",
        Outcome::Refused(_) => "refused",
        Outcome::Broken(_) => "BROKEN PORT",
    }
}

/// Whether `o` is what `e` says.
fn as_expected(o: &Outcome, e: &Expect) -> bool {
    match (o, e) {
        (Outcome::Equal, Expect::Equal) => true,
        (Outcome::Differs(_), Expect::Differs(_)) => true,
        (Outcome::Refused(msg), Expect::Refused(says)) => msg.contains(says),
        // A broken port fails whatever the table says.
        _ => false,
    }
}

fn cell(s: &str) -> String {
    s.replace('|', "\\|").replace('\n', " ")
}

/// Run `all` (those whose id contains `COWKIT_RPM_AT_ONLY`) on twin
/// roots and fail unless each ends as `table` says, `over` first (a
/// scenario in `over` ends as it says there, whatever `table` says).
/// Packages are built once into `cache`.
pub fn run_table(
    table: &[(&'static str, Expect)],
    over: &[(&'static str, Expect)],
    all: Vec<Scenario>,
    cache: &Path,
) {
    let Some(dir) = scratch(Fs::Xfs) else { return };
    let only = std::env::var("COWKIT_RPM_AT_ONLY").unwrap_or_default();
    let jobs: usize = std::env::var("COWKIT_RPM_AT_JOBS")
        .ok()
        .and_then(|j| j.parse().ok())
        .unwrap_or(4);
    // The table and the scenarios name the same ids, once each.
    let mut merged: BTreeMap<&str, &Expect> = table.iter().map(|(id, e)| (*id, e)).collect();
    assert_eq!(merged.len(), table.len(), "an id is twice in the table");
    let n_over = over.len();
    let over: BTreeMap<&str, &Expect> = over.iter().map(|(id, e)| (*id, e)).collect();
    assert_eq!(over.len(), n_over, "an id is twice in the table over it");
    merged.extend(over);
    let table = merged;
    let mut ids: Vec<&str> = all.iter().map(|s| s.id.as_str()).collect();
    ids.sort();
    let n = ids.len();
    ids.dedup();
    assert_eq!(ids.len(), n, "a scenario id is used twice");
    let missing: Vec<&&str> = ids.iter().filter(|i| !table.contains_key(**i)).collect();
    let stale: Vec<&&str> = table.keys().filter(|i| !ids.contains(i)).collect();
    assert!(
        stale.is_empty(),
        "EXPECTED lines without a scenario: {stale:?}"
    );

    let chosen: Vec<&Scenario> = all.iter().filter(|s| s.id.contains(&only)).collect();
    // Every package once (kept between runs, named by a hash of its spec).
    let mut specs = BTreeMap::new();
    for s in &chosen {
        for (_, p) in &s.pkgs {
            specs.entry(build_key(p)).or_insert_with(|| p.clone());
        }
    }
    let specs: Vec<(String, _)> = specs.into_iter().collect();
    let built: BTreeMap<String, PathBuf> = specs
        .iter()
        .map(|(k, _)| k.clone())
        .zip(parallel(&specs, 2, |(_, p)| build(p, cache)))
        .collect();

    let cowkit = PathBuf::from(env!("CARGO_BIN_EXE_cowkit"));
    let outcomes = parallel(&chosen, jobs, |s| {
        let d = dir.path().join(&s.id);
        let o = run_scenario(s, &d, &built, &cowkit);
        // Keep the scratch filesystem small: the roots are not needed now.
        let _ = std::fs::remove_dir_all(&d);
        o
    });

    let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
    let mut wrong = Vec::new();
    let mut suggest = Vec::new();
    let mut report = String::from(
        "| scenario | .at file: AT_SETUP | what | outcome | first difference / cowkit's refusal | expected |\n\
         |---|---|---|---|---|---|\n",
    );
    for (s, o) in chosen.iter().zip(&outcomes) {
        *counts.entry(outcome_word(o)).or_default() += 1;
        let e = table
            .get(s.id.as_str())
            .copied()
            .unwrap_or(&Expect::Missing);
        let detail = match o {
            Outcome::Equal => String::new(),
            Outcome::Differs(d) | Outcome::Refused(d) | Outcome::Broken(d) => d.clone(),
        };
        let want = match e {
            Expect::Equal => "equal".to_string(),
            Expect::Differs(why) => format!("differs: {why}"),
            Expect::Refused(says) => format!("refused: `{says}`"),
            Expect::Missing => "(no line in EXPECTED)".to_string(),
        };
        report.push_str(&format!(
            "| {} | {}: {} | {} | {} | {} | {} |\n",
            s.id,
            s.file,
            cell(s.title),
            cell(&s.what),
            outcome_word(o),
            cell(&detail),
            cell(&want)
        ));
        eprintln!("{}: {} {}", s.id, outcome_word(o), detail);
        if !as_expected(o, e) {
            wrong.push(format!(
                "{}: expected {want}, got {} {detail}",
                s.id,
                outcome_word(o)
            ));
            suggest.push(match o {
                Outcome::Equal => format!("    (\"{}\", Equal),", s.id),
                Outcome::Refused(m) => {
                    format!("    (\"{}\", Refused(\"{}\")),", s.id, m.replace('"', "'"))
                }
                Outcome::Differs(d) | Outcome::Broken(d) => {
                    format!("    (\"{}\", Differs(\"{}\")),", s.id, d.replace('"', "'"))
                }
            });
        }
    }
    let summary = format!(
        "{} scenarios: {} equal, {} differ, {} refused{}",
        chosen.len(),
        counts.get("equal").unwrap_or(&0),
        counts.get("differs").unwrap_or(&0),
        counts.get("refused").unwrap_or(&0),
        match counts.get("BROKEN PORT") {
            Some(b) => format!(", {b} broken ports"),
            None => String::new(),
        }
    );
    eprintln!("{summary}");
    if let Some(path) = std::env::var_os("COWKIT_RPM_AT_REPORT") {
        std::fs::write(path, format!("{summary}\n\n{report}")).unwrap();
    }
    assert!(
        wrong.is_empty() && missing.is_empty(),
        "{} scenario(s) did not end as EXPECTED says (update the line when the change is right):\n{}\n\
         their lines as they ended (a Differs reason to be written in words):\n{}",
        wrong.len(),
        wrong.join("\n"),
        suggest.join("\n")
    );
}
