//! A private PostgreSQL server run from the machine's own installation.
//!
//! quizd `initdb`s a data directory, runs `postgres` on a Unix socket inside it (no TCP port,
//! so nothing collides) and stops it when quizd stops. The server is a child process bound to
//! its parent by `PR_SET_PDEATHSIG`: if quizd dies, even by `kill -9`, PostgreSQL gets SIGINT
//! and shuts down cleanly. As root, the PostgreSQL programs run as the `postgres` user
//! (initdb refuses root).

use std::fs;
use std::os::unix::fs::{PermissionsExt, chown};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow, bail};

pub const DB_USER: &str = "quizd";
pub const DB_NAME: &str = "quizd";

#[derive(Debug, Clone)]
pub struct Options {
    /// The directory that holds the cluster (`pgdata/`), the socket (`socket/`) and the log.
    pub dir: PathBuf,
    /// `false` for throwaway test clusters: no fsync, no synchronous commit.
    pub durable: bool,
    pub max_connections: u32,
    /// More server settings, `name=value` each, passed as `-c` (the exam-start benchmark
    /// preloads `pg_stat_statements` this way).
    pub settings: Vec<String>,
}

/// A running private server. Dropping it stops the server.
pub struct PrivatePostgres {
    pid: u32,
    exited: Arc<(Mutex<Option<String>>, Condvar)>,
    socket_dir: PathBuf,
    log: PathBuf,
}

struct RunAs {
    uid: u32,
    gid: u32,
}

fn postgres_account() -> Result<Option<RunAs>> {
    if unsafe { libc::geteuid() } != 0 {
        return Ok(None);
    }
    let name = std::ffi::CString::new("postgres").expect("no NUL");
    let pw = unsafe { libc::getpwnam(name.as_ptr()) };
    if pw.is_null() {
        bail!(
            "quizd is running as root, and PostgreSQL refuses to run as root, but there is no \
             `postgres` user to run it as. Run quizd as an ordinary user, create a `postgres` \
             user, or set DATABASE_URL to use a running server."
        );
    }
    let (uid, gid) = unsafe { ((*pw).pw_uid, (*pw).pw_gid) };
    Ok(Some(RunAs { uid, gid }))
}

/// `PG_BINDIR`, then the newest `/usr/lib/postgresql/*/bin`, then `PATH`.
pub fn find_bindir() -> Result<PathBuf> {
    let has_server = |d: &Path| d.join("initdb").is_file() && d.join("postgres").is_file();
    if let Some(dir) = std::env::var_os("PG_BINDIR") {
        let dir = PathBuf::from(dir);
        if has_server(&dir) {
            return Ok(dir);
        }
        bail!(
            "PG_BINDIR={} has no initdb and postgres programs",
            dir.display()
        );
    }
    let mut versions: Vec<(u32, PathBuf)> = fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            let v: u32 = e.file_name().to_str()?.split('.').next()?.parse().ok()?;
            Some((v, e.path().join("bin")))
        })
        .filter(|(_, d)| has_server(d))
        .collect();
    versions.sort();
    if let Some((_, dir)) = versions.pop() {
        return Ok(dir);
    }
    for dir in std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default()) {
        if has_server(&dir) {
            return Ok(dir);
        }
        // Debian puts wrappers on PATH; follow one to the real bin directory.
        if let Ok(real) = fs::canonicalize(dir.join("initdb"))
            && let Some(parent) = real.parent()
            && has_server(parent)
        {
            return Ok(parent.to_path_buf());
        }
    }
    bail!(
        "No PostgreSQL server installation found (looked in PG_BINDIR, /usr/lib/postgresql/*/bin \
         and PATH for initdb and postgres).\n\
         Install one (Debian/Ubuntu: `apt-get install postgresql`; Fedora: `dnf install \
         postgresql-server`; macOS: `brew install postgresql`), point PG_BINDIR at its bin \
         directory, or set DATABASE_URL to use a running server."
    )
}

fn pg_command(bindir: &Path, program: &str, run_as: &Option<RunAs>) -> Command {
    let mut cmd = Command::new(bindir.join(program));
    if let Some(r) = run_as {
        cmd.uid(r.uid).gid(r.gid);
    }
    cmd.env_remove("PGDATA").env("LC_ALL", "C.UTF-8");
    cmd
}

/// Makes `dir` (created if need be) owned by the account PostgreSQL runs as, and checks that
/// this account can reach it.
fn prepare_dir(dir: &Path, run_as: &Option<RunAs>) -> Result<()> {
    fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    fs::set_permissions(dir, fs::Permissions::from_mode(0o700))?;
    if let Some(r) = run_as {
        chown(dir, Some(r.uid), Some(r.gid))?;
        let abs = fs::canonicalize(dir)?;
        for ancestor in abs.ancestors().skip(1) {
            let meta = fs::metadata(ancestor)?;
            let mode = meta.permissions().mode();
            use std::os::unix::fs::MetadataExt;
            let reachable = mode & 0o001 != 0
                || (meta.uid() == r.uid && mode & 0o100 != 0)
                || (meta.gid() == r.gid && mode & 0o010 != 0);
            if !reachable {
                bail!(
                    "PostgreSQL runs as the `postgres` user (quizd is running as root) and cannot \
                     reach {}: {} is not searchable by it. Choose a data directory it can reach \
                     (--data-dir, e.g. /var/lib/quizd) or set DATABASE_URL.",
                    dir.display(),
                    ancestor.display()
                );
            }
        }
    }
    Ok(())
}

fn log_tail(log: &Path) -> String {
    let text = fs::read_to_string(log).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(15)..].join("\n")
}

impl PrivatePostgres {
    /// Initializes the cluster if it does not exist yet, starts the server and waits until it
    /// accepts connections, and creates the `quizd` database.
    pub fn start(opts: &Options) -> Result<Self> {
        let bindir = find_bindir()?;
        let run_as = postgres_account()?;
        let dir = &opts.dir;
        fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
        let dir = fs::canonicalize(dir)?;
        prepare_dir(&dir, &run_as)?;
        let pgdata = dir.join("pgdata");
        let socket_dir = dir.join("socket");
        let log = dir.join("postgres.log");
        prepare_dir(&socket_dir, &run_as)?;

        if !pgdata.join("PG_VERSION").is_file() {
            // initdb into a scratch directory and rename, so an interrupted initdb never
            // leaves a half-made cluster behind.
            let scratch = dir.join("pgdata.init");
            let _ = fs::remove_dir_all(&scratch);
            prepare_dir(&scratch, &run_as)?;
            let mut cmd = pg_command(&bindir, "initdb", &run_as);
            cmd.arg("-D").arg(&scratch).args([
                "-U",
                DB_USER,
                "--auth=trust",
                "-E",
                "UTF8",
                "--locale=C.UTF-8",
            ]);
            if !opts.durable {
                cmd.arg("--no-sync");
            }
            let out = cmd
                .output()
                .with_context(|| format!("cannot run {}", bindir.join("initdb").display()))?;
            if !out.status.success() {
                bail!(
                    "initdb failed:\n{}{}",
                    String::from_utf8_lossy(&out.stdout),
                    String::from_utf8_lossy(&out.stderr)
                );
            }
            fs::rename(&scratch, &pgdata)?;
        }

        let logfile = fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&log)?;
        if let Some(r) = &run_as {
            chown(&log, Some(r.uid), Some(r.gid))?;
        }
        let mut cmd = pg_command(&bindir, "postgres", &run_as);
        cmd.arg("-D")
            .arg(&pgdata)
            .arg("-k")
            .arg(&socket_dir)
            .args(["-c", "listen_addresses="])
            .args(["-c", &format!("max_connections={}", opts.max_connections)])
            .args(["-c", "unix_socket_permissions=0700"]);
        for setting in &opts.settings {
            cmd.args(["-c", setting]);
        }
        if !opts.durable {
            cmd.args(["-c", "fsync=off", "-c", "synchronous_commit=off"])
                .args(["-c", "full_page_writes=off"]);
        }
        cmd.stdin(Stdio::null())
            .stdout(logfile.try_clone()?)
            .stderr(logfile);
        unsafe {
            // Runs in the child after the uid change (which would clear it): PostgreSQL gets
            // SIGINT, a fast clean shutdown, when the thread that started it goes away.
            cmd.pre_exec(|| {
                if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGINT) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }

        // The server is spawned from a thread that lives exactly as long as it does, since
        // the parent-death signal follows the spawning thread, not the process.
        let exited = Arc::new((Mutex::new(None::<String>), Condvar::new()));
        let (tx, rx) = std::sync::mpsc::channel();
        let exited_in_thread = exited.clone();
        std::thread::Builder::new()
            .name("postgres".into())
            .spawn(move || match cmd.spawn() {
                Ok(mut child) => {
                    let _ = tx.send(Ok(child.id()));
                    let status = child.wait().map(|s| s.to_string()).unwrap_or_default();
                    let (lock, cvar) = &*exited_in_thread;
                    *lock.lock().expect("lock") = Some(status);
                    cvar.notify_all();
                }
                Err(e) => {
                    let _ = tx.send(Err(e));
                }
            })?;
        let pid = rx
            .recv()
            .map_err(|_| anyhow!("the postgres launcher thread died"))?
            .with_context(|| format!("cannot run {}", bindir.join("postgres").display()))?;
        let server = Self {
            pid,
            exited,
            socket_dir,
            log,
        };
        server.wait_ready(Duration::from_secs(60))?;
        server.create_database(&bindir)?;
        Ok(server)
    }

    fn has_exited(&self) -> Option<String> {
        self.exited.0.lock().expect("lock").clone()
    }

    fn wait_ready(&self, timeout: Duration) -> Result<()> {
        let socket = self.socket_dir.join(".s.PGSQL.5432");
        let started = Instant::now();
        loop {
            if let Some(status) = self.has_exited() {
                bail!(
                    "PostgreSQL exited during startup ({status}). Its log ({}):\n{}",
                    self.log.display(),
                    log_tail(&self.log)
                );
            }
            if socket.exists() && std::os::unix::net::UnixStream::connect(&socket).is_ok() {
                // The socket accepts before recovery ends; a query proves readiness.
                if self.psql("postgres", "SELECT 1").is_ok() {
                    return Ok(());
                }
            }
            if started.elapsed() > timeout {
                bail!(
                    "PostgreSQL did not become ready within {timeout:?}. Its log ({}):\n{}",
                    self.log.display(),
                    log_tail(&self.log)
                );
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Runs one SQL statement as the superuser with `psql`, which ships with the server.
    fn psql(&self, database: &str, sql: &str) -> Result<String> {
        let bindir = find_bindir()?;
        let out = Command::new(bindir.join("psql"))
            .args(["-X", "-q", "-t", "-A", "-v", "ON_ERROR_STOP=1"])
            .args(["-h"])
            .arg(&self.socket_dir)
            .args(["-U", DB_USER, "-d", database, "-c", sql])
            .stdin(Stdio::null())
            .output()?;
        if !out.status.success() {
            bail!("{}", String::from_utf8_lossy(&out.stderr));
        }
        Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
    }

    fn create_database(&self, _bindir: &Path) -> Result<()> {
        let exists = self.psql(
            "postgres",
            &format!("SELECT 1 FROM pg_database WHERE datname = '{DB_NAME}'"),
        )?;
        if exists.is_empty() {
            self.psql("postgres", &format!("CREATE DATABASE {DB_NAME}"))?;
        }
        Ok(())
    }

    /// A connection URL for a database on this server (sqlx, psql and pgbench accept it).
    pub fn url(&self, database: &str) -> String {
        format!(
            "postgres://{DB_USER}@localhost/{database}?host={}",
            self.socket_dir.display()
        )
    }

    pub fn socket_dir(&self) -> &Path {
        &self.socket_dir
    }

    /// Immediate shutdown (SIGQUIT), as a crash would be: no checkpoint, clients cut off;
    /// the next start recovers from the WAL.
    pub fn stop_immediately(&self) {
        if self.has_exited().is_none() {
            unsafe {
                libc::kill(self.pid as libc::pid_t, libc::SIGQUIT);
            }
            let (lock, cvar) = &*self.exited;
            let guard = lock.lock().expect("lock");
            let _ = cvar
                .wait_timeout_while(guard, Duration::from_secs(30), |s| s.is_none())
                .expect("lock");
        }
    }

    /// Fast shutdown (SIGINT): active transactions roll back, a checkpoint is written.
    pub fn stop(&self) {
        if self.has_exited().is_some() {
            return;
        }
        unsafe {
            libc::kill(self.pid as libc::pid_t, libc::SIGINT);
        }
        let (lock, cvar) = &*self.exited;
        let guard = lock.lock().expect("lock");
        let (_guard, timeout) = cvar
            .wait_timeout_while(guard, Duration::from_secs(30), |s| s.is_none())
            .expect("lock");
        if timeout.timed_out() {
            tracing::warn!(pid = self.pid, "PostgreSQL did not stop within 30 s");
        }
    }
}

impl Drop for PrivatePostgres {
    fn drop(&mut self) {
        self.stop();
    }
}
