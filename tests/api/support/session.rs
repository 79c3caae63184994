//! Sessions: a signed-in person and the requests they make, each answered by a [`Reply`] that
//! asserts what the test expects. One line says who does what and what comes back:
//!
//! ```ignore
//! let learner = app.learner().await;
//! learner.put(&path, &body).await.problem(409, "answer_final").await;
//! let attempt = learner.post(&start, &json!({})).await.status(201).await;
//! ```

use std::ops::Deref;
use std::sync::atomic::{AtomicUsize, Ordering};

use reqwest::{Client, Method};
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::{Person, TestApp, assert_problem, bearer, expect_status, send_quiz, token_for};

/// A signed-in person of one test's quizd. Derefs to the [`Person`] (id, email, tokens).
pub struct Session<'a> {
    app: &'a TestApp,
    person: Person,
}

impl Deref for Session<'_> {
    type Target = Person;
    fn deref(&self) -> &Person {
        &self.person
    }
}

/// Distinct addresses for the people `learner()` and its kin make.
fn next_email(role: &str) -> String {
    static N: AtomicUsize = AtomicUsize::new(0);
    format!("{role}-{}@example.org", N.fetch_add(1, Ordering::Relaxed))
}

impl TestApp {
    /// A newly registered, verified learner, signed in.
    pub async fn learner(&self) -> Session<'_> {
        self.person(&next_email("learner"), "learner").await
    }

    /// A newly registered instructor, signed in with the role in their token.
    pub async fn instructor(&self) -> Session<'_> {
        self.person(&next_email("instructor"), "instructor").await
    }

    /// A newly registered admin, signed in with the role in their token.
    pub async fn admin(&self) -> Session<'_> {
        self.person(&next_email("admin"), "admin").await
    }

    /// A newly registered person with this address and role (see [`token_for`]), signed in.
    pub async fn person(&self, email: &str, role: &str) -> Session<'_> {
        self.session(token_for(self, email, role).await)
    }

    /// `person`'s session on this quizd.
    pub fn session(&self, person: Person) -> Session<'_> {
        Session { app: self, person }
    }

    /// Requests with this access token and nothing else known of its holder (the id nil, the
    /// email empty): a person signed in some other way (an LTI launch's token exchange), or a
    /// token that is not one.
    pub fn bearer_session(&self, access: &str) -> Session<'_> {
        self.session(Person {
            id: uuid::Uuid::nil(),
            email: String::new(),
            access: access.to_string(),
            refresh: String::new(),
        })
    }
}

impl<'a> Session<'a> {
    /// The quizd this person is signed in to.
    pub fn app(&self) -> &'a TestApp {
        self.app
    }

    /// A request with this person's bearer token, to build further.
    pub fn request(&self, method: Method, path: &str) -> reqwest::RequestBuilder {
        bearer(self.app, method, path, &self.person.access)
    }

    pub async fn get(&self, path: &str) -> Reply {
        Reply::of(self.request(Method::GET, path)).await
    }

    pub async fn delete(&self, path: &str) -> Reply {
        Reply::of(self.request(Method::DELETE, path)).await
    }

    pub async fn post(&self, path: &str, body: &Value) -> Reply {
        Reply::of(self.request(Method::POST, path).json(body)).await
    }

    pub async fn put(&self, path: &str, body: &Value) -> Reply {
        Reply::of(self.request(Method::PUT, path).json(body)).await
    }

    pub async fn patch(&self, path: &str, body: &Value) -> Reply {
        Reply::of(self.request(Method::PATCH, path).json(body)).await
    }

    /// Sends a quiz in TOML, as [`send_quiz`] does: `POST /v1/quizzes`, or
    /// `PUT /v1/quizzes/{slug}`.
    pub async fn send_quiz(&self, slug: Option<&str>, toml: &str) -> Reply {
        Reply(send_quiz(self.app, &self.person.access, slug, toml).await)
    }
}

/// Nobody signed in: requests without a token, answered by a [`Reply`] like a session's.
pub struct Anonymous<'a> {
    app: &'a TestApp,
    client: Client,
}

impl TestApp {
    /// Requests from nobody signed in.
    pub fn anonymous(&self) -> Anonymous<'_> {
        self.anonymous_with(&self.client)
    }

    /// Requests from nobody signed in, sent with `client` (one from another address, made by
    /// [`client_from`](super::client_from)).
    pub fn anonymous_with(&self, client: &Client) -> Anonymous<'_> {
        Anonymous {
            app: self,
            client: client.clone(),
        }
    }
}

impl Anonymous<'_> {
    pub async fn get(&self, path: &str) -> Reply {
        Reply::of(self.client.get(self.app.url(path))).await
    }

    pub async fn post(&self, path: &str, body: &Value) -> Reply {
        Reply::of(self.client.post(self.app.url(path)).json(body)).await
    }

    /// `POST /v1/auth/login` with these credentials.
    pub async fn sign_in(&self, email: &str, password: &str) -> Reply {
        let body = serde_json::json!({ "email": email, "password": password });
        self.post("/v1/auth/login", &body).await
    }
}

/// quizd's answer to a request, waiting for the test to say what it expects of it.
#[must_use = "a reply asserts nothing until it is checked"]
pub struct Reply(reqwest::Response);

impl Reply {
    /// Sends a request built by hand (a header or a client the sessions do not make).
    pub async fn of(request: reqwest::RequestBuilder) -> Self {
        Self(request.send().await.expect("quizd answers"))
    }

    /// Asserts the status (showing the body if it differs); the JSON body, `Null` if none.
    pub async fn status(self, status: u16) -> Value {
        expect_status(self.0, status).await
    }

    /// Asserts a success (2xx); the body as a `T`.
    pub async fn ok<T: DeserializeOwned>(self) -> T {
        let status = self.0.status();
        let url = self.0.url().to_string();
        let text = self.0.text().await.expect("a body");
        assert!(status.is_success(), "status of {url}: {status}: {text}");
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("body of {url}: {e}: {text}"))
    }

    /// Asserts an RFC 9457 problem with this status and code; the problem.
    pub async fn problem(self, status: u16, code: &str) -> Value {
        assert_problem(self.0, status, code).await
    }

    /// The status, to branch on before saying what is expected.
    pub fn status_code(&self) -> u16 {
        self.0.status().as_u16()
    }

    /// A header of the answer, when it has it and it is text.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.0.headers().get(name).and_then(|v| v.to_str().ok())
    }

    /// The response itself, for what the other checks do not read (headers, bytes).
    pub fn response(self) -> reqwest::Response {
        self.0
    }
}
