//! Running the `cowkit` binary in tests: exit status, stdout, stderr, and
//! stdout as JSON.
#![allow(dead_code)]

use std::process::Command;

use serde_json::Value;

/// What a command did.
pub struct Run {
    pub ok: bool,
    pub stdout: Vec<u8>,
    pub stderr: String,
}

impl Run {
    /// Stdout as JSON, or a panic that shows both outputs.
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.stdout).unwrap_or_else(|e| {
            panic!(
                "stdout is not JSON ({e}):\n{}\nstderr:\n{}",
                String::from_utf8_lossy(&self.stdout),
                self.stderr
            )
        })
    }
}

/// The `cowkit` binary of this build.
pub fn cowkit() -> Command {
    Command::new(env!("CARGO_BIN_EXE_cowkit"))
}

/// Run `cmd` to its end.
pub fn run(cmd: &mut Command) -> Run {
    let out = cmd.output().unwrap();
    Run {
        ok: out.status.success(),
        stdout: out.stdout,
        stderr: String::from_utf8(out.stderr).unwrap(),
    }
}
