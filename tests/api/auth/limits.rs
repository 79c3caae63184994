//! Sign-in and sign-up limits: per account, per client address and per pair, enforced alike
//! by several instances on one database.

use serde_json::json;

use crate::support::session::Reply;
use crate::support::{PASSWORD, TestApp, client_from, login, register};

use super::register_with;

fn retry_after(res: &Reply) -> u64 {
    res.header("retry-after")
        .expect("a Retry-After header")
        .parse()
        .expect("Retry-After in seconds")
}

#[tokio::test]
async fn a_sixth_sign_in_attempt_on_one_account_within_a_minute_is_throttled() {
    let app = TestApp::spawn().await;
    register(&app, "ada@example.com").await;
    register(&app, "grace@example.com").await;
    // Five attempts, in any case of the email, are allowed (and answered).
    for email in [
        "ada@example.com",
        "ADA@example.com",
        "Ada@Example.com",
        "ada@EXAMPLE.com",
        "ada@example.COM",
    ] {
        let res = app.anonymous().sign_in(email, "guess").await;
        res.problem(401, "invalid_credentials").await;
    }
    // The sixth is refused, even with the right password.
    let res = app.anonymous().sign_in("ada@example.com", PASSWORD).await;
    let wait = retry_after(&res);
    assert!((1..=60).contains(&wait), "Retry-After: {wait}");
    let body = res.problem(429, "too_many_attempts").await;
    assert!(!body.to_string().contains("access_token"));
    // Another account from the same address is not affected.
    login(&app, "grace@example.com").await;
}

#[tokio::test]
async fn whitespace_around_the_email_does_not_escape_the_per_account_limit() {
    let app = TestApp::spawn().await;
    register(&app, "ada@example.com").await;
    for _ in 0..5 {
        let res = app.anonymous().sign_in("ada@example.com", "guess").await;
        res.problem(401, "invalid_credentials").await;
    }
    for email in [" ada@example.com", "ada@example.com ", "\tADA@example.com"] {
        let res = app.anonymous().sign_in(email, PASSWORD).await;
        assert_eq!(
            res.status_code(),
            429,
            "{email:?} is the same account and should be throttled"
        );
    }
}

#[tokio::test]
async fn guesses_from_one_address_meet_429() {
    let app = TestApp::spawn().await;
    register(&app, "ada@example.com").await;
    // Failures over many accounts: 100 from one address, then one every 2 s; allow slack.
    let mut throttled_at = None;
    for i in 0..110 {
        let res = app
            .anonymous()
            .sign_in(&format!("guess{i}@example.com"), "guess")
            .await;
        if res.status_code() == 429 {
            let wait = retry_after(&res);
            assert!((1..=60).contains(&wait), "Retry-After: {wait}");
            res.problem(429, "too_many_attempts").await;
            throttled_at = Some(i);
            break;
        }
        res.problem(401, "invalid_credentials").await;
    }
    let throttled_at = throttled_at.expect("the address was throttled within 110 guesses");
    assert!(throttled_at >= 100, "throttled after only {throttled_at}");
    // The guessing address is refused even for a real account with its password …
    let res = app.anonymous().sign_in("ada@example.com", PASSWORD).await;
    assert!(retry_after(&res) >= 1);
    res.problem(429, "too_many_attempts").await;
    // … and other addresses are not.
    let res = app
        .anonymous_with(&client_from("127.0.0.2"))
        .sign_in("ada@example.com", PASSWORD)
        .await;
    res.status(200).await;
}

#[tokio::test]
async fn the_owner_signs_in_while_an_attacker_guesses_from_elsewhere() {
    let app = TestApp::spawn().await;
    register(&app, "ada@example.com").await;
    let attacker = client_from("127.0.0.2");
    for i in 0..12 {
        let res = app
            .anonymous_with(&attacker)
            .sign_in("ada@example.com", "guess")
            .await;
        if i < 5 {
            res.problem(401, "invalid_credentials").await;
        } else {
            let wait = retry_after(&res);
            assert!((1..=13).contains(&wait), "Retry-After: {wait}");
            res.problem(429, "too_many_attempts").await;
        }
        // Between the guesses, the owner signs in from their own address, every time.
        login(&app, "ada@example.com").await;
    }
    // The attacker's address is refused even with the right password: it is still guessing.
    let res = app
        .anonymous_with(&attacker)
        .sign_in("ada@example.com", PASSWORD)
        .await;
    res.problem(429, "too_many_attempts").await;
}

#[tokio::test]
async fn a_class_behind_one_address_signs_in_without_429() {
    let app = TestApp::spawn_configured(|state| {
        state.login_limiter =
            quizd::auth::ratelimit::LoginLimiter::new(b"the class's own secret", 0);
    })
    .await;
    let class: Vec<String> = (0..60).map(|i| format!("learner{i}@example.com")).collect();
    for email in &class {
        register(&app, email).await;
    }
    // Everyone signs in, some after a typo or two, from the one address of the school.
    for (i, email) in class.iter().enumerate() {
        for _ in 0..(i % 3) {
            let res = app.anonymous().sign_in(email, "typo in it").await;
            res.problem(401, "invalid_credentials").await;
        }
        let res = app.anonymous().sign_in(email, PASSWORD).await;
        res.status(200).await;
    }
    // And again, at once, as the class opens the quiz on a second device.
    let nobody = app.anonymous();
    let again = class.iter().map(|email| nobody.sign_in(email, PASSWORD));
    for res in futures_util::future::join_all(again).await {
        res.status(200).await;
    }
}

#[tokio::test]
async fn distributed_guessing_meets_the_per_account_limit() {
    let app = TestApp::spawn().await;
    register(&app, "ada@example.com").await;
    // The owner has signed in from their address before.
    login(&app, "ada@example.com").await;
    // 100 failures an hour per account from all addresses: 20 addresses × 5 guesses (each
    // pair stays within its own limit).
    for a in 0..20 {
        let guesser = client_from(&format!("127.0.1.{}", a + 1));
        for _ in 0..5 {
            let res = app
                .anonymous_with(&guesser)
                .sign_in("ada@example.com", "guess")
                .await;
            res.problem(401, "invalid_credentials").await;
        }
    }
    // A fresh address meets the account's limit, even with the right password.
    let fresh = client_from("127.0.2.1");
    let res = app
        .anonymous_with(&fresh)
        .sign_in("ada@example.com", "guess")
        .await;
    let wait = retry_after(&res);
    assert!((1..=37).contains(&wait), "Retry-After: {wait}");
    res.problem(429, "too_many_attempts").await;
    let res = app
        .anonymous_with(&fresh)
        .sign_in("ada@example.com", PASSWORD)
        .await;
    res.problem(429, "too_many_attempts").await;
    // The owner's own address is not refused; other accounts are not affected.
    login(&app, "ada@example.com").await;
    register(&app, "grace@example.com").await;
    let res = app
        .anonymous_with(&fresh)
        .sign_in("grace@example.com", PASSWORD)
        .await;
    res.status(200).await;
}

/// The try (1-based) at which guesses at `email` from `guesser` meet `429`, each sent to the
/// next of `apps` in turn; `None` within 20 tries.
async fn try_meeting_429(
    apps: &[&TestApp],
    guesser: &reqwest::Client,
    email: &str,
) -> Option<usize> {
    for try_no in 1..=20 {
        let app = apps[try_no % apps.len()];
        let res = app.anonymous_with(guesser).sign_in(email, "guess").await;
        if res.status_code() == 429 {
            res.problem(429, "too_many_attempts").await;
            return Some(try_no);
        }
        res.problem(401, "invalid_credentials").await;
    }
    None
}

#[tokio::test]
async fn guesses_spread_over_two_instances_meet_429_at_the_same_try_as_on_one() {
    let app = TestApp::spawn().await;
    let other = app.another_instance().await;
    register(&app, "ada@example.com").await;
    register(&app, "grace@example.com").await;
    let guesser = client_from("127.0.0.2");
    let on_one = try_meeting_429(&[&app], &guesser, "ada@example.com").await;
    let on_two = try_meeting_429(&[&app, &other], &guesser, "grace@example.com").await;
    assert_eq!(on_one, Some(6));
    assert_eq!(
        on_two, on_one,
        "spreading the guesses over instances gained tries"
    );
    // Both instances refuse the guesser, even with the right password; the owners, from
    // their own address, sign in through either.
    for instance in [&app, &other] {
        let res = instance
            .anonymous_with(&guesser)
            .sign_in("grace@example.com", PASSWORD)
            .await;
        res.problem(429, "too_many_attempts").await;
        login(instance, "grace@example.com").await;
        login(instance, "ada@example.com").await;
    }
}

#[tokio::test]
async fn an_address_known_to_one_instance_passes_the_account_limit_on_another() {
    let app = TestApp::spawn().await;
    let other = app.another_instance().await;
    register(&app, "ada@example.com").await;
    // The owner signs in through the first instance.
    login(&app, "ada@example.com").await;
    // 20 addresses × 5 guesses, over both instances: the account's 100.
    for a in 0..20 {
        let guesser = client_from(&format!("127.0.1.{}", a + 1));
        for g in 0..5 {
            let instance = if (a + g) % 2 == 0 { &app } else { &other };
            let res = instance
                .anonymous_with(&guesser)
                .sign_in("ada@example.com", "guess")
                .await;
            res.problem(401, "invalid_credentials").await;
        }
    }
    let fresh = client_from("127.0.2.1");
    for instance in [&app, &other] {
        let res = instance
            .anonymous_with(&fresh)
            .sign_in("ada@example.com", PASSWORD)
            .await;
        res.problem(429, "too_many_attempts").await;
    }
    // The second instance knows the owner's address from the first one's sign-in.
    login(&other, "ada@example.com").await;
}

#[tokio::test]
async fn expired_limit_rows_are_deleted_as_failures_are_counted() {
    let app = TestApp::spawn().await;
    // 40 keys whose counts ran out an hour ago, as a quiet night leaves them.
    sqlx::query(
        "INSERT INTO sign_in_limits (kind, key, until)
         SELECT 'address', substring(sha256(i::text::bytea) FROM 1 FOR 16), now() - interval '1 hour'
           FROM generate_series(1, 40) i",
    )
    .execute(&app.pool)
    .await
    .unwrap();
    let expired = || async {
        sqlx::query_scalar::<_, i64>("SELECT count(*) FROM sign_in_limits WHERE until < now()")
            .fetch_one(&app.pool)
            .await
            .unwrap()
    };
    assert_eq!(expired().await, 40);
    for _ in 0..3 {
        let res = app.anonymous().sign_in("nobody@example.com", "guess").await;
        res.problem(401, "invalid_credentials").await;
    }
    // Each failure deleted 16 of them and wrote its own three keys (live).
    assert_eq!(expired().await, 0);
    let live: i64 = sqlx::query_scalar("SELECT count(*) FROM sign_in_limits")
        .fetch_one(&app.pool)
        .await
        .unwrap();
    assert_eq!(
        live, 3,
        "one row per key: the pair, the account, the address"
    );
}

/// `POST /v1/auth/register` for student `i`.
async fn sign_up_student(app: &TestApp, i: usize) -> Reply {
    register_with(
        app,
        json!({
            "email": format!("student{i}@example.com"),
            "display_name": format!("Student {i}"),
            "password": PASSWORD,
        }),
    )
    .await
}

#[tokio::test]
async fn sign_ups_from_one_address_are_throttled_after_a_classroom_burst_and_create_nothing() {
    let app = TestApp::spawn().await;
    // 30 at once (a class behind one NAT), then 10 a minute; allow slack for the refill.
    let mut throttled_at = None;
    for i in 0..40 {
        let res = sign_up_student(&app, i).await;
        if res.status_code() == 429 {
            let wait = retry_after(&res);
            assert!((1..=60).contains(&wait), "Retry-After: {wait}");
            res.problem(429, "too_many_signups").await;
            throttled_at = Some(i);
            break;
        }
        res.status(201).await;
    }
    let throttled_at = throttled_at.expect("the address was throttled within 40 sign-ups");
    assert!(throttled_at >= 30, "throttled after only {throttled_at}");
    let refused: bool =
        sqlx::query_scalar("SELECT NOT EXISTS (SELECT 1 FROM users WHERE email = $1)")
            .bind(format!("student{throttled_at}@example.com"))
            .fetch_one(&app.pool)
            .await
            .unwrap();
    assert!(refused, "the refused sign-up created no account");
    // Signing in is limited separately: a student who signed up can still sign in.
    login(&app, "student0@example.com").await;
}

#[tokio::test]
async fn sign_ups_spread_over_two_instances_meet_the_same_burst_as_on_one() {
    let app = TestApp::spawn().await;
    let other = app.another_instance().await;
    let mut throttled_at = None;
    for i in 0..40 {
        let instance = if i % 2 == 0 { &app } else { &other };
        let res = sign_up_student(instance, i).await;
        if res.status_code() == 429 {
            res.problem(429, "too_many_signups").await;
            throttled_at = Some(i);
            break;
        }
        res.status(201).await;
    }
    // 30 at once, as on one instance (the refill adds one every 6 s: allow one more).
    let throttled_at = throttled_at.expect("the address was throttled within 40 sign-ups");
    assert!(
        (30..=31).contains(&throttled_at),
        "throttled at {throttled_at}"
    );
}
