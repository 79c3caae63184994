//! The real peers the tests talk to that are written in Python (the LRS, the webhook receiver,
//! the SMTP server): a program of the repository run in its virtual environment, which listens
//! on a free loopback port and says so on its first line of output, `READY <port>`.

use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::io::{BufRead, BufReader, Lines};
use std::path::PathBuf;
use std::process::{Child, ChildStdout, Command, Stdio};
use std::sync::{Arc, Mutex, OnceLock};

use super::repo;

/// The Python of the virtual environment `target/<venv>`, made when missing, with the pinned
/// packages of `requirements` (a path in the repository) installed: the real peers the tests
/// start (the LMS, the SMTP server, the LRS) come from PyPI, so `cargo test` needs no setup.
/// Quick when everything is installed already. Call it once per test run (behind a `OnceLock`).
pub fn python_venv(venv: &str, requirements: &str) -> Result<PathBuf, String> {
    let venv = repo().join("target").join(venv);
    let python = venv.join("bin/python");
    let run = |cmd: &mut std::process::Command| -> Result<(), String> {
        let out = cmd.output().map_err(|e| format!("{cmd:?}: {e}"))?;
        if out.status.success() {
            Ok(())
        } else {
            Err(format!(
                "{cmd:?} failed:\n{}",
                String::from_utf8_lossy(&out.stderr)
            ))
        }
    };
    if !python.exists() {
        run(std::process::Command::new("python3")
            .args(["-m", "venv"])
            .arg(&venv))?;
    }
    run(std::process::Command::new(venv.join("bin/pip"))
        .args(["install", "-q", "--disable-pip-version-check", "-r"])
        .arg(repo().join(requirements)))?;
    Ok(python)
}

/// A running peer; killed when dropped (it also stops when its standard input closes, so a
/// peer the process keeps to its end stops with it).
pub struct PythonPeer {
    pub port: u16,
    child: Child,
}

/// A peer's standard output after its `READY` line.
pub type Output = Lines<BufReader<ChildStdout>>;

/// The Python of the virtual environment `target/<venv>` with the packages of `requirements`,
/// made once per test run (see [`python_venv`]), however many tests ask at once.
fn python(venv: &str, requirements: &str) -> PathBuf {
    type Once = Arc<OnceLock<Result<PathBuf, String>>>;
    static VENVS: Mutex<BTreeMap<String, Once>> = Mutex::new(BTreeMap::new());
    let once = VENVS
        .lock()
        .unwrap()
        .entry(venv.to_string())
        .or_default()
        .clone();
    once.get_or_init(|| python_venv(venv, requirements))
        .clone()
        .unwrap_or_else(|e| panic!("cannot prepare the Python environment {venv}: {e}"))
}

impl PythonPeer {
    /// Starts `script` (a path in the repository) with `args` under the Python of `venv` with
    /// the packages of `requirements`, and waits until it is ready. `name` says who it is
    /// when it does not start. What it writes afterwards is not read.
    pub fn start(
        name: &str,
        venv: &str,
        requirements: &str,
        script: &str,
        args: &[&OsStr],
    ) -> PythonPeer {
        Self::start_reading(name, venv, requirements, script, args).0
    }

    /// [`PythonPeer::start`], for a peer that reports on its output: the lines after `READY`.
    pub fn start_reading(
        name: &str,
        venv: &str,
        requirements: &str,
        script: &str,
        args: &[&OsStr],
    ) -> (PythonPeer, Output) {
        let mut child = Command::new(python(venv, requirements))
            .arg(repo().join(script))
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap_or_else(|e| panic!("{name} does not start: {e}"));
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let ready = lines.next().and_then(Result::ok).unwrap_or_default();
        let port = ready
            .strip_prefix("READY ")
            .and_then(|port| port.parse().ok())
            .unwrap_or_else(|| panic!("{name} did not start (said {ready:?})"));
        (PythonPeer { port, child }, lines)
    }

    /// `http://127.0.0.1:<port><path>`.
    pub fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }
}

impl Drop for PythonPeer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
