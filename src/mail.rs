//! Outgoing mail: verification links and invitations, through SMTP (`--smtp-url`, the `lettre`
//! crate), or into the log when no SMTP server is configured.
//!
//! A link in a message is made from the configured public URL (`--public-url`), never from a
//! request: the `Host` and `X-Forwarded-Host` headers are the client's to choose, and a link
//! on the host a client named hands the message's token to that host's owner (who then claims
//! the address's course invitations). Without a public URL a message that carries a link is
//! not mailed at all: its link (a path) goes to the log, and quizd says so at start-up.
//!
//! Why a thread of its own: a handler hands a message over only after its transaction committed
//! (so a mail never announces something that rolled back), and it must not wait for an SMTP
//! server. [`Mailer::send`] only queues; one `quizd-mailer` thread with its own small runtime
//! talks to the server, a few messages at a time. The queue is bounded ([`QUEUE`]); a message that
//! finds it full, or that the server refuses, is logged and lost — never the invitation or the
//! verification it announces, which live in the database: the resend endpoints send them again.
//! The thread ends when the last `Mailer` (the app state) is dropped.

use std::time::Duration;

use futures_util::StreamExt;
use lettre::message::Mailbox;
use lettre::message::header::ContentType;
use lettre::{AsyncSmtpTransport, AsyncTransport, Message, Tokio1Executor};
use tokio::sync::mpsc;

/// Messages waiting for the SMTP server at most; more than the largest CSV enrollment
/// (5,000 rows), so one bulk enrollment never overflows an idle queue.
pub const QUEUE: usize = 10_000;

/// Messages in flight at once, each on a connection of the transport's pool (which keeps at
/// most 10): one at a time, a 5,000-row roster took minutes to reach a local server.
const CONCURRENT_SENDS: usize = 8;

/// How long one SMTP exchange may take before it counts as failed.
const SMTP_TIMEOUT: Duration = Duration::from_secs(20);

/// One plain-text message.
#[derive(Debug, Clone)]
pub struct Mail {
    pub to: String,
    pub subject: String,
    pub text: String,
    /// The link the message carries, written to the log when the message is not mailed: on
    /// the public URL, or only its path when none is configured.
    pub link: String,
    /// Whether the link is on the configured public URL; without one the message is never
    /// mailed.
    mailable: bool,
}

impl Mail {
    /// A message to `to` carrying a link to `path` on quizd, made from `public_url`
    /// ([`crate::state::AppState::public_url`]); `text` writes the body around the link.
    pub fn with_link(
        public_url: Option<&str>,
        to: &str,
        subject: impl Into<String>,
        path: &str,
        text: impl FnOnce(&str) -> String,
    ) -> Self {
        let (link, mailable) = match public_url {
            Some(base) => (format!("{}{path}", base.trim_end_matches('/')), true),
            None => (path.to_string(), false),
        };
        Self {
            to: to.to_string(),
            subject: subject.into(),
            text: text(&link),
            link,
            mailable,
        }
    }
}

/// Where mail goes: an SMTP server, or the log.
#[derive(Clone)]
pub struct Mailer {
    queue: Option<mpsc::Sender<Mail>>,
}

impl Default for Mailer {
    fn default() -> Self {
        Self::log_only()
    }
}

impl Mailer {
    /// No SMTP: each message's recipient, subject and link go to the log.
    pub fn log_only() -> Self {
        Self { queue: None }
    }

    /// Mail through the SMTP server at `url` (`smtp://host:port` in clear, for a relay on
    /// localhost; `smtps://…` for TLS; `smtp://…?tls=required` for STARTTLS; credentials as
    /// `smtp://user:password@host`), from `from` (`quizd <noreply@example.org>`).
    pub fn smtp(url: &str, from: &str) -> anyhow::Result<Self> {
        let from: Mailbox = from
            .parse()
            .map_err(|e| anyhow::anyhow!("--mail-from {from:?} is not a mailbox: {e}"))?;
        // Checked here, where the operator sees the error at start-up.
        AsyncSmtpTransport::<Tokio1Executor>::from_url(url)
            .map_err(|e| anyhow::anyhow!("--smtp-url is not an SMTP URL: {e}"))?;
        let (tx, rx) = mpsc::channel(QUEUE);
        let url = url.to_string();
        std::thread::Builder::new()
            .name("quizd-mailer".into())
            .spawn(move || deliver(url, from, rx))?;
        Ok(Self { queue: Some(tx) })
    }

    pub fn is_configured(&self) -> bool {
        self.queue.is_some()
    }

    /// Queues `mail` (never waits). Without SMTP, or without a public URL for its link, logs
    /// it instead.
    pub fn send(&self, mail: Mail) {
        match &self.queue {
            None => tracing::info!(
                to = %mail.to, subject = %mail.subject, link = %mail.link,
                "mail not sent (no --smtp-url): the link is here"
            ),
            Some(_) if !mail.mailable => tracing::warn!(
                to = %mail.to, subject = %mail.subject, link = %mail.link,
                "mail not sent (no --public-url to make its link from): the link's path is here"
            ),
            Some(queue) => {
                if let Err(e) = queue.try_send(mail) {
                    let mail = match e {
                        mpsc::error::TrySendError::Full(m)
                        | mpsc::error::TrySendError::Closed(m) => m,
                    };
                    tracing::warn!(to = %mail.to, subject = %mail.subject,
                        "mail queue full or stopped; not sent (it can be sent again)");
                }
            }
        }
    }
}

/// The mailer thread: sends what is queued until every sender is gone.
fn deliver(url: String, from: Mailbox, rx: mpsc::Receiver<Mail>) {
    let rt = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            tracing::error!(error = %e, "the mailer cannot start; no mail will be sent");
            return;
        }
    };
    rt.block_on(async move {
        let transport = match AsyncSmtpTransport::<Tokio1Executor>::from_url(&url) {
            Ok(b) => b.timeout(Some(SMTP_TIMEOUT)).build(),
            Err(e) => {
                tracing::error!(error = %e, "the SMTP URL was refused; no mail will be sent");
                return;
            }
        };
        let queued = futures_util::stream::unfold(rx, |mut rx| async move {
            rx.recv().await.map(|mail| (mail, rx))
        });
        queued
            .for_each_concurrent(CONCURRENT_SENDS, |mail| {
                let transport = &transport;
                let from = &from;
                async move {
                    let message = match compose(from, &mail) {
                        Ok(m) => m,
                        Err(e) => {
                            tracing::error!(to = %mail.to, error = %e, "mail not composed; not sent");
                            return;
                        }
                    };
                    match transport.send(message).await {
                        Ok(_) => tracing::info!(to = %mail.to, subject = %mail.subject, "mail sent"),
                        Err(e) => tracing::error!(to = %mail.to, subject = %mail.subject, error = %e,
                            "mail not sent (it can be sent again)"),
                    }
                }
            })
            .await;
    });
}

fn compose(from: &Mailbox, mail: &Mail) -> anyhow::Result<Message> {
    Ok(Message::builder()
        .from(from.clone())
        .to(mail.to.parse()?)
        .subject(&mail.subject)
        .header(ContentType::TEXT_PLAIN)
        .body(mail.text.clone())?)
}
