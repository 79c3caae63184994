//! A real SMTP server for the tests: `tests/mail/smtp_sink.py` (aiosmtpd, from PyPI) on a free
//! loopback port, one per test process, started by the first test that needs it. It runs in
//! `target/mail-venv`, made (pip, from the pinned `tests/mail/requirements.txt`) when missing,
//! so `cargo test` needs no setup. quizd sends to it with `lettre` exactly as it would to a
//! relay; the tests read what arrived, decoded, and follow the links in it.
//!
//! Tests run in parallel against the one server: each uses addresses of its own (see
//! [`address`]) and takes only the messages sent to them.

use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use serde_json::Value;

use crate::support::TestApp;
use crate::support::peer::PythonPeer;

pub struct Mailbox {
    /// `smtp://127.0.0.1:<port>`, for `--smtp-url`.
    pub url: String,
    received: Arc<Mutex<Vec<Value>>>,
    _server: Mutex<PythonPeer>,
}

/// The test process's SMTP server. It stops when the process ends (its stdin closes).
pub fn mailbox() -> &'static Mailbox {
    static MAILBOX: OnceLock<Mailbox> = OnceLock::new();
    MAILBOX.get_or_init(|| {
        let (server, lines) = PythonPeer::start_reading(
            "the SMTP server",
            "mail-venv",
            "tests/mail/requirements.txt",
            "tests/mail/smtp_sink.py",
            &[],
        );
        let received = Arc::new(Mutex::new(Vec::new()));
        let sink = received.clone();
        std::thread::spawn(move || {
            for line in lines.map_while(Result::ok) {
                let message: Value = serde_json::from_str(&line).expect("the sink writes JSON");
                sink.lock().unwrap().push(message);
            }
        });
        Mailbox {
            url: format!("smtp://127.0.0.1:{}", server.port),
            received,
            _server: Mutex::new(server),
        }
    })
}

/// An address no other test uses, `name` with a random tag, in the case given.
pub fn address(name: &str) -> String {
    format!(
        "{name}.{}@Example.org",
        &uuid::Uuid::new_v4().simple().to_string()[..12]
    )
}

impl Mailbox {
    fn take(&self, to: &str) -> Option<Value> {
        let to = to.to_lowercase();
        let mut received = self.received.lock().unwrap();
        let i = received.iter().position(|m| {
            m["rcpt_tos"]
                .as_array()
                .unwrap()
                .iter()
                .any(|r| r.as_str().unwrap().to_lowercase() == to)
        })?;
        Some(received.remove(i))
    }

    /// The next message to `to` (waits up to 20 s for it), taken out of the mailbox.
    pub async fn message_to(&self, to: &str) -> Value {
        for _ in 0..400 {
            if let Some(m) = self.take(to) {
                return m;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("no message to {to} arrived");
    }

    /// Asserts that no message to `to` arrives within `wait`.
    pub async fn nothing_to(&self, to: &str, wait: Duration) {
        tokio::time::sleep(wait).await;
        if let Some(m) = self.take(to) {
            panic!("unexpected message to {to}: {m:#}");
        }
    }
}

/// The first `http://` link in a message's text.
pub fn link_in(message: &Value) -> String {
    let text = message["text"].as_str().unwrap();
    let start = text.find("http://").expect("the message has a link");
    text[start..]
        .split(|c: char| c.is_whitespace())
        .next()
        .unwrap()
        .to_string()
}

/// A quizd that sends its mail to [`mailbox`], its public URL (`--public-url`) its own
/// address, with `configure` applied too.
pub async fn spawn_with_mail(
    configure: impl FnOnce(&mut quizd::state::AppState) + Send + 'static,
) -> TestApp {
    let url = mailbox().url.clone();
    TestApp::spawn_knowing_base(move |state, base| {
        state.mailer = quizd::mail::Mailer::smtp(&url, "quizd <quizd@example.org>").unwrap();
        state.lti.public_url = Some(base.to_string());
        configure(state);
    })
    .await
}

/// A quizd that sends its mail to [`mailbox`] and was given no public URL.
pub async fn spawn_with_mail_and_no_public_url() -> TestApp {
    let url = mailbox().url.clone();
    TestApp::spawn_configured(move |state| {
        state.mailer = quizd::mail::Mailer::smtp(&url, "quizd <quizd@example.org>").unwrap();
    })
    .await
}
