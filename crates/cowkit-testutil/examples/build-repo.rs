//! Build the test repository of `cowkit_testutil::repo` into a directory
//! and print where its version-1 packages are (for `bench/image-build.sh`).
//!
//! ```sh
//! cargo run --release -p cowkit-testutil --example build-repo -- /var/tmp/x
//! ```

fn main() {
    let dir = std::env::args_os()
        .nth(1)
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| {
            eprintln!("usage: build-repo DIR");
            std::process::exit(2)
        });
    std::fs::create_dir_all(&dir).expect("cannot create DIR");
    let repo = cowkit_testutil::repo::build_repo(&dir);
    for name in cowkit_testutil::repo::MAIN {
        println!("{}", repo.rpm(name).display());
    }
}
