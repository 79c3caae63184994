//! Invitations and verified email, over a real SMTP server (`mailbox`): the tests read the
//! messages quizd sent, follow their links over HTTP, and only then is an invitation claimed.

use std::time::Duration;

use chrono::Utc;
use quizd::clock::Clock;
use serde_json::{Value, json};

use crate::mailbox::{
    address, link_in, mailbox, spawn_with_mail, spawn_with_mail_and_no_public_url,
};
use crate::support::courses::enroll;
use crate::support::{
    Person, TestApp, assert_problem, bearer, expect_status, get_as, login, post_as, register,
    register_unverified,
};

async fn course(app: &TestApp, teacher: &Person, title: &str) -> String {
    let res = post_as(
        app,
        &teacher.access,
        "/v1/courses",
        &json!({ "title": title }),
    )
    .await;
    expect_status(res, 201).await["id"]
        .as_str()
        .unwrap()
        .to_string()
}

async fn roster_emails(app: &TestApp, teacher: &Person, course: &str) -> Vec<String> {
    let res = get_as(
        app,
        &teacher.access,
        &format!("/v1/courses/{course}/enrollments"),
    )
    .await;
    expect_status(res, 200).await["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["email"].as_str().unwrap().to_lowercase())
        .collect()
}

async fn pending(app: &TestApp, teacher: &Person, course: &str) -> Vec<Value> {
    let res = get_as(
        app,
        &teacher.access,
        &format!("/v1/courses/{course}/invitations"),
    )
    .await;
    expect_status(res, 200).await["items"]
        .as_array()
        .unwrap()
        .clone()
}

fn path_of(app: &TestApp, link: &str) -> String {
    link.strip_prefix(&app.base)
        .unwrap_or_else(|| panic!("{link} is not on {}", app.base))
        .to_string()
}

/// Follows a verification link as a person would: the page, then its button (a POST).
async fn follow_verification_link(app: &TestApp, link: &str) -> Value {
    let page = app.client.get(link).send().await.unwrap();
    assert_eq!(page.status().as_u16(), 200);
    let html = page.text().await.unwrap();
    let action = format!("action=\"{}\"", path_of(app, link));
    assert!(html.contains(&action), "{html}");
    let res = app.client.post(link).send().await.unwrap();
    expect_status(res, 200).await
}

#[tokio::test]
async fn an_invited_address_is_enrolled_only_once_its_owner_verifies_it_through_the_mailed_link() {
    let app = spawn_with_mail(|_| {}).await;
    let teacher = app.person(&address("teacher"), "instructor").await;
    let id = course(&app, &teacher, "Parallel computing").await;
    let invitee = address("Mina");
    let lower = invitee.to_lowercase();

    let invitation = enroll(&teacher, &id, json!({ "email": format!("  {invitee} ") }))
        .await
        .status(202)
        .await;
    assert_eq!(invitation["email"], lower.as_str());
    assert_eq!(invitation["role"], "learner");
    assert_eq!(invitation["course_id"], id.as_str());
    assert_eq!(invitation["invited_by"], teacher.id.to_string());
    let mail = mailbox().message_to(&lower).await;
    assert_eq!(mail["subject"], "You are invited to a course on quizd");
    assert!(
        mail["text"]
            .as_str()
            .unwrap()
            .contains("Parallel computing"),
        "{mail}"
    );
    assert_eq!(mail["from"], "quizd <quizd@example.org>");
    assert!(mail["text"].as_str().unwrap().contains(&app.base), "{mail}");
    assert_eq!(pending(&app, &teacher, &id).await.len(), 1);

    // Signing up with the address proves nothing yet: no enrollment, the invitation waits.
    let mina = register_unverified(&app, &invitee).await;
    let me = expect_status(get_as(&app, &mina.access, "/v1/me").await, 200).await;
    assert!(me["email_verified_at"].is_null());
    let verification = mailbox().message_to(&lower).await;
    assert_eq!(
        verification["subject"],
        "Confirm your email address for quizd"
    );
    // Nor does signing in before the address is verified.
    login(&app, &invitee).await;
    assert!(!roster_emails(&app, &teacher, &id).await.contains(&lower));
    let res = get_as(&app, &mina.access, &format!("/v1/courses/{id}")).await;
    assert_problem(res, 404, "course_not_found").await;
    assert_eq!(pending(&app, &teacher, &id).await.len(), 1);

    // Opening the link shows a button and changes nothing; pressing it verifies and claims.
    let link = link_in(&verification);
    let page = app.client.get(&link).send().await.unwrap();
    assert_eq!(page.status().as_u16(), 200);
    assert!(!roster_emails(&app, &teacher, &id).await.contains(&lower));
    let verified = follow_verification_link(&app, &link).await;
    assert_eq!(verified["user_id"], mina.id.to_string());
    assert_eq!(verified["enrolled_in"], json!([id]));
    assert!(roster_emails(&app, &teacher, &id).await.contains(&lower));
    assert!(pending(&app, &teacher, &id).await.is_empty());
    let me = expect_status(get_as(&app, &mina.access, "/v1/me").await, 200).await;
    assert_eq!(me["email_verified_at"], verified["email_verified_at"]);
    let res = get_as(&app, &mina.access, &format!("/v1/courses/{id}")).await;
    assert_eq!(expect_status(res, 200).await["my_role"], "learner");

    // The link works once.
    let res = app.client.post(&link).send().await.unwrap();
    assert_problem(res, 409, "verification_used").await;
    let res = post_as(&app, &mina.access, "/v1/me/email-verification", &json!({})).await;
    assert_problem(res, 409, "email_already_verified").await;
    let res = app
        .client
        .post(app.url(&format!("/v1/email-verifications/{}", "0".repeat(64))))
        .send()
        .await
        .unwrap();
    assert_problem(res, 404, "verification_not_found").await;
    let res = app
        .client
        .post(app.url("/v1/email-verifications/not-a-token"))
        .send()
        .await
        .unwrap();
    assert_problem(res, 404, "verification_not_found").await;
}

#[tokio::test]
async fn enrolling_the_email_of_an_unverified_account_invites_it_and_it_is_enrolled_once_verified()
{
    let app = spawn_with_mail(|_| {}).await;
    let teacher = app.person(&address("teacher"), "instructor").await;
    let id = course(&app, &teacher, "Exams").await;
    // Someone signed up with this address; nobody has proved it is theirs.
    let who = address("Unproven");
    let lower = who.to_lowercase();
    let unproven = register_unverified(&app, &who).await;
    let link = link_in(&mailbox().message_to(&lower).await);

    let invitation = enroll(&teacher, &id, json!({ "email": who, "role": "instructor" }))
        .await
        .status(202)
        .await;
    // The same answer as for an address with no account: it names no account.
    assert_eq!(invitation["email"], lower.as_str());
    assert_eq!(invitation["role"], "instructor");
    assert!(invitation.get("user_id").is_none(), "{invitation}");
    let mail = mailbox().message_to(&lower).await;
    assert_eq!(mail["subject"], "You are invited to a course on quizd");
    assert!(!roster_emails(&app, &teacher, &id).await.contains(&lower));
    let res = get_as(&app, &unproven.access, &format!("/v1/courses/{id}")).await;
    assert_problem(res, 404, "course_not_found").await;
    // Signing in unverified claims nothing either.
    login(&app, &who).await;
    assert!(!roster_emails(&app, &teacher, &id).await.contains(&lower));
    assert_eq!(pending(&app, &teacher, &id).await.len(), 1);

    // The account verifies the address: the invitation is its enrollment, in that transaction.
    let verified = follow_verification_link(&app, &link).await;
    assert_eq!(verified["user_id"], unproven.id.to_string());
    assert_eq!(verified["enrolled_in"], json!([id]));
    assert!(pending(&app, &teacher, &id).await.is_empty());
    let res = get_as(&app, &unproven.access, &format!("/v1/courses/{id}")).await;
    assert_eq!(expect_status(res, 200).await["my_role"], "instructor");

    // Verified, the address enrolls the account at once (here: a change of role).
    let enrollment = enroll(
        &teacher,
        &id,
        json!({ "email": format!(" {who} "), "role": "learner" }),
    )
    .await
    .status(201)
    .await;
    assert_eq!(enrollment["user_id"], unproven.id.to_string());
    assert_eq!(enrollment["role"], "learner");
    assert!(pending(&app, &teacher, &id).await.is_empty());
    mailbox()
        .nothing_to(&lower, Duration::from_millis(300))
        .await;
}

#[tokio::test]
async fn a_csv_roster_invites_an_unverified_account_and_says_nothing_of_it_until_it_verifies() {
    let app = spawn_with_mail(|_| {}).await;
    let teacher = app.person(&address("teacher"), "instructor").await;
    let id = course(&app, &teacher, "Roster").await;
    let proven = address("proven");
    let unproven = address("unproven");
    let inside = address("inside");
    let nobody = address("nobody");
    let proven_p = app.person(&proven, "learner").await;
    let unproven_p = register_unverified(&app, &unproven).await;
    let link = link_in(&mailbox().message_to(&unproven).await);
    // Unverified, but enrolled already (by id): the roster changes nothing for them.
    let inside_p = register_unverified(&app, &inside).await;
    mailbox().message_to(&inside).await;
    enroll(&teacher, &id, json!({ "user_id": inside_p.id }))
        .await
        .status(201)
        .await;

    let csv = format!(
        "email,role
{proven},learner
{unproven},instructor
{inside},instructor
{nobody},learner
"
    );
    let res = csv_post(&app, &teacher, &id, csv).send().await.unwrap();
    let report = expect_status(res, 200).await;
    let rows = report["rows"].as_array().unwrap();
    let got: Vec<&str> = rows.iter().map(|r| r["result"].as_str().unwrap()).collect();
    assert_eq!(got, ["enrolled", "invited", "already_enrolled", "invited"]);
    assert_eq!(rows[0]["user_id"], proven_p.id.to_string());
    // An invited row looks the same whether or not an account has the address.
    for row in [&rows[1], &rows[3]] {
        assert!(row["user_id"].is_null(), "{row}");
        assert!(row["invitation_id"].is_string(), "{row}");
    }
    assert_eq!(rows[2]["user_id"], inside_p.id.to_string());
    assert_eq!(
        report["summary"],
        json!({"enrolled": 1, "invited": 2, "already_enrolled": 1, "already_invited": 0, "invalid": 0})
    );
    mailbox().message_to(&unproven).await;
    mailbox().message_to(&nobody).await;
    mailbox()
        .nothing_to(&inside, Duration::from_millis(300))
        .await;
    let roster = roster_emails(&app, &teacher, &id).await;
    assert!(!roster.contains(&unproven.to_lowercase()));
    let res = get_as(&app, &inside_p.access, &format!("/v1/courses/{id}")).await;
    assert_eq!(expect_status(res, 200).await["my_role"], "learner");

    let verified = follow_verification_link(&app, &link).await;
    assert_eq!(verified["enrolled_in"], json!([id]));
    let res = get_as(&app, &unproven_p.access, &format!("/v1/courses/{id}")).await;
    assert_eq!(expect_status(res, 200).await["my_role"], "instructor");
    let invited: Vec<Value> = pending(&app, &teacher, &id).await;
    assert_eq!(invited.len(), 1);
    assert_eq!(invited[0]["email"], nobody.to_lowercase());
}

#[tokio::test]
async fn a_full_roster_of_unverified_accounts_is_invited_whole_in_one_request() {
    let app = TestApp::spawn().await;
    let teacher = app.person("teacher@example.org", "instructor").await;
    let id = course(&app, &teacher, "Large").await;
    // The worst roster the limits allow for this path: 5,000 rows, each the address of an
    // account that has not verified it (made behind the API's back).
    sqlx::query(
        "INSERT INTO users (id, email, display_name, role)
         SELECT gen_random_uuid(), 'unverified' || i || '@example.org', 'U' || i, 'learner'
           FROM generate_series(1, 5000) AS i",
    )
    .execute(&app.pool)
    .await
    .unwrap();
    let mut csv = String::from("email,role\n");
    for i in 1..=5000 {
        csv.push_str(&format!("Unverified{i}@example.org,learner\n"));
    }
    let started = std::time::Instant::now();
    let res = csv_post(&app, &teacher, &id, csv).send().await.unwrap();
    let report = expect_status(res, 200).await;
    eprintln!(
        "a 5,000-row roster of unverified accounts took {:?}",
        started.elapsed()
    );
    assert_eq!(
        report["summary"],
        json!({"enrolled": 0, "invited": 5000, "already_enrolled": 0, "already_invited": 0, "invalid": 0})
    );
    let rows = report["rows"].as_array().unwrap();
    assert!(rows.iter().all(|r| r["user_id"].is_null()));
    assert_eq!(roster_emails(&app, &teacher, &id).await.len(), 1);
}

#[tokio::test]
async fn a_browser_pressing_the_button_gets_a_page_rather_than_json() {
    let app = spawn_with_mail(|_| {}).await;
    let who = address("browser");
    register_unverified(&app, &who).await;
    let link = link_in(&mailbox().message_to(&who).await);
    let res = app
        .client
        .post(&link)
        .header("accept", "text/html,application/xhtml+xml")
        .header("content-type", "application/x-www-form-urlencoded")
        .send()
        .await
        .unwrap();
    assert_eq!(res.status().as_u16(), 200);
    let csp = res.headers()["content-security-policy"]
        .to_str()
        .unwrap()
        .to_string();
    assert!(csp.contains("default-src 'none'"), "{csp}");
    assert!(
        res.text()
            .await
            .unwrap()
            .contains("Your email address is confirmed")
    );
    let res = app
        .client
        .post(&link)
        .header("accept", "text/html")
        .send()
        .await
        .unwrap();
    assert_eq!(res.status().as_u16(), 200);
    assert!(
        res.text()
            .await
            .unwrap()
            .contains("This link does not work")
    );
    // An API client still gets the problem.
    let res = app.client.post(&link).send().await.unwrap();
    assert_problem(res, 409, "verification_used").await;
}

#[tokio::test]
async fn a_verified_address_claims_at_sign_in_what_an_archived_course_held_back() {
    let app = spawn_with_mail(|_| {}).await;
    let teacher = app.person(&address("teacher"), "instructor").await;
    let open = course(&app, &teacher, "Open course").await;
    let paused = course(&app, &teacher, "Paused course").await;
    let invitee = address("ana");
    let lower = invitee.to_lowercase();
    for (id, role) in [(&open, "learner"), (&paused, "instructor")] {
        enroll(&teacher, id, json!({ "email": invitee, "role": role }))
            .await
            .status(202)
            .await;
        mailbox().message_to(&lower).await;
    }
    teacher
        .patch(
            &format!("/v1/courses/{paused}"),
            &json!({ "archived": true }),
        )
        .await
        .status(200)
        .await;

    let ana = register_unverified(&app, &invitee).await;
    let verified =
        follow_verification_link(&app, &link_in(&mailbox().message_to(&lower).await)).await;
    // The archived course keeps its invitation for later.
    assert_eq!(verified["enrolled_in"], json!([open]));
    assert_eq!(pending(&app, &teacher, &paused).await.len(), 1);

    teacher
        .patch(
            &format!("/v1/courses/{paused}"),
            &json!({ "archived": false }),
        )
        .await
        .status(200)
        .await;
    let (access, _) = login(&app, &invitee).await;
    let res = get_as(&app, &access, &format!("/v1/courses/{paused}")).await;
    assert_eq!(expect_status(res, 200).await["my_role"], "instructor");
    assert!(pending(&app, &teacher, &paused).await.is_empty());
    assert_eq!(ana.email, invitee);
}

#[tokio::test]
async fn a_verification_link_expires_after_48_hours_and_new_ones_are_limited_per_account() {
    let clock = Clock::manual(Utc::now());
    let app = spawn_with_mail({
        let clock = clock.clone();
        move |s| s.clock = clock
    })
    .await;
    let who = address("late");
    let person = register_unverified(&app, &who).await;
    let first = link_in(&mailbox().message_to(&who).await);
    clock.advance(chrono::Duration::hours(48) + chrono::Duration::seconds(1));
    let res = app.client.post(&first).send().await.unwrap();
    assert_problem(res, 410, "verification_expired").await;

    // Sign-up's link is out of the hour's window now: five more fit in it, then 429 says how
    // long to wait.
    let mut links = Vec::new();
    for _ in 0..4 {
        let res = post_as(
            &app,
            &person.access,
            "/v1/me/email-verification",
            &json!({}),
        )
        .await;
        let sent = expect_status(res, 202).await;
        assert_eq!(sent["email"], who.as_str());
        links.push(link_in(&mailbox().message_to(&who).await));
    }
    let res = post_as(
        &app,
        &person.access,
        "/v1/me/email-verification",
        &json!({}),
    )
    .await;
    expect_status(res, 202).await;
    links.push(link_in(&mailbox().message_to(&who).await));
    let res = post_as(
        &app,
        &person.access,
        "/v1/me/email-verification",
        &json!({}),
    )
    .await;
    let wait: u64 = res.headers()["retry-after"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!((3500..=3601).contains(&wait), "{wait}");
    assert_problem(res, 429, "too_many_emails").await;
    mailbox().nothing_to(&who, Duration::from_millis(300)).await;

    // Any of the live links verifies.
    let verified = follow_verification_link(&app, &links[2]).await;
    assert_eq!(verified["enrolled_in"], json!([]));
    clock.advance(chrono::Duration::hours(1));
    let res = post_as(
        &app,
        &person.access,
        "/v1/me/email-verification",
        &json!({}),
    )
    .await;
    assert_problem(res, 409, "email_already_verified").await;
    let res = bearer(
        &app,
        reqwest::Method::POST,
        "/v1/me/email-verification",
        "bad",
    )
    .send()
    .await
    .unwrap();
    assert_problem(res, 401, "unauthorized").await;
}

fn csv_post(app: &TestApp, who: &Person, course: &str, body: String) -> reqwest::RequestBuilder {
    bearer(
        app,
        reqwest::Method::POST,
        &format!("/v1/courses/{course}/enrollments/csv"),
        &who.access,
    )
    .header("content-type", "text/csv; charset=utf-8")
    .body(body)
}

#[tokio::test]
async fn a_csv_roster_enrolls_invites_and_reports_each_bad_row_without_stopping_the_others() {
    let app = spawn_with_mail(|_| {}).await;
    let teacher = app.person(&address("teacher"), "instructor").await;
    let id = course(&app, &teacher, "Roster course").await;
    let has_account = address("hasaccount");
    let enrolled = address("enrolled");
    let invited_before = address("invitedbefore");
    let newcomer = address("newcomer");
    let account = app.person(&has_account, "learner").await;
    let already = app.person(&enrolled, "learner").await;
    enroll(&teacher, &id, json!({ "user_id": already.id }))
        .await
        .status(201)
        .await;
    enroll(&teacher, &id, json!({ "email": invited_before }))
        .await
        .status(202)
        .await;
    mailbox().message_to(&invited_before).await;

    let csv = format!(
        "email,role\n\
         {has_account},instructor\n\
         {enrolled},instructor\n\
         {newcomer},\n\
         not-an-email,learner\n\
         {invited_before},learner\n\
         {},learner\n\
         someone@example.org,admin\n\
         a@example.org,learner,extra\n",
        newcomer.to_uppercase()
    );
    let res = csv_post(&app, &teacher, &id, csv).send().await.unwrap();
    let report = expect_status(res, 200).await;
    let rows = report["rows"].as_array().unwrap();
    let got: Vec<(u64, &str)> = rows
        .iter()
        .map(|r| (r["line"].as_u64().unwrap(), r["result"].as_str().unwrap()))
        .collect();
    assert_eq!(
        got,
        vec![
            (2, "enrolled"),
            (3, "already_enrolled"),
            (4, "invited"),
            (5, "invalid"),
            (6, "already_invited"),
            (7, "invalid"),
            (8, "invalid"),
            (9, "invalid"),
        ]
    );
    assert_eq!(
        report["summary"],
        json!({"enrolled": 1, "invited": 1, "already_enrolled": 1, "already_invited": 1, "invalid": 4})
    );
    assert_eq!(rows[0]["user_id"], account.id.to_string());
    assert_eq!(rows[0]["role"], "instructor");
    assert_eq!(rows[2]["email"], newcomer.to_lowercase());
    assert!(rows[2]["invitation_id"].is_string());
    assert_eq!(rows[3]["reason"], "not an email address");
    assert_eq!(rows[5]["reason"], "the same email as line 4");
    assert!(rows[6]["reason"].as_str().unwrap().contains("role"));
    assert!(rows[7]["reason"].as_str().unwrap().contains("columns"));

    // What the report says is what happened.
    let roster = roster_emails(&app, &teacher, &id).await;
    assert!(roster.contains(&has_account.to_lowercase()));
    let res = already.get(&format!("/v1/courses/{id}")).await.response();
    assert_eq!(
        expect_status(res, 200).await["my_role"],
        "learner",
        "an enrolled person keeps their role"
    );
    let invited: Vec<String> = pending(&app, &teacher, &id)
        .await
        .iter()
        .map(|i| i["email"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(invited.len(), 2);
    assert!(
        invited.contains(&newcomer.to_lowercase())
            && invited.contains(&invited_before.to_lowercase())
    );
    let mail = mailbox().message_to(&newcomer).await;
    assert_eq!(mail["subject"], "You are invited to a course on quizd");
    // A pending invitation is not mailed again by the roster.
    mailbox()
        .nothing_to(&invited_before, Duration::from_millis(500))
        .await;
}

#[tokio::test]
async fn a_csv_roster_that_is_not_one_is_refused_whole() {
    let app = TestApp::spawn().await;
    let teacher = app.person("teacher@example.org", "instructor").await;
    let learner = app.person("learner@example.org", "learner").await;
    let other = app.person("other@example.org", "instructor").await;
    let id = course(&app, &teacher, "Strict").await;

    let res = csv_post(
        &app,
        &teacher,
        &id,
        "mail,role\na@example.org,learner\n".into(),
    )
    .send()
    .await
    .unwrap();
    assert_problem(res, 422, "invalid_csv_header").await;
    let mut big = String::from("email,role\n");
    for i in 0..5001 {
        big.push_str(&format!("p{i}@example.org,learner\n"));
    }
    let res = csv_post(&app, &teacher, &id, big).send().await.unwrap();
    assert_problem(res, 422, "too_many_rows").await;
    let huge = format!("email,role\n{}", "x".repeat(1024 * 1024));
    let res = csv_post(&app, &teacher, &id, huge).send().await.unwrap();
    assert_problem(res, 413, "payload_too_large").await;
    let res = bearer(
        &app,
        reqwest::Method::POST,
        &format!("/v1/courses/{id}/enrollments/csv"),
        &teacher.access,
    )
    .json(&json!({"email": "a@example.org"}))
    .send()
    .await
    .unwrap();
    assert_problem(res, 415, "unsupported_media_type").await;
    // Nothing of it was enrolled or invited.
    assert_eq!(
        roster_emails(&app, &teacher, &id).await,
        vec!["teacher@example.org"]
    );
    assert!(pending(&app, &teacher, &id).await.is_empty());

    let ok = "email,role\na@example.org,learner\n".to_string();
    let res = csv_post(&app, &learner, &id, ok.clone())
        .send()
        .await
        .unwrap();
    assert_problem(res, 404, "course_not_found").await;
    enroll(&teacher, &id, json!({ "user_id": learner.id }))
        .await
        .status(201)
        .await;
    let res = csv_post(&app, &learner, &id, ok.clone())
        .send()
        .await
        .unwrap();
    assert_problem(res, 403, "forbidden").await;
    let res = csv_post(&app, &other, &id, ok).send().await.unwrap();
    assert_problem(res, 404, "course_not_found").await;
}

#[tokio::test]
async fn staff_list_resend_and_revoke_invitations_and_nobody_else_can() {
    let clock = Clock::manual(Utc::now());
    let app = spawn_with_mail({
        let clock = clock.clone();
        move |s| s.clock = clock
    })
    .await;
    let teacher = app.person(&address("teacher"), "instructor").await;
    let other = app.person(&address("other"), "instructor").await;
    let learner = register(&app, &address("learner")).await;
    let id = course(&app, &teacher, "Invitations").await;
    enroll(&teacher, &id, json!({ "user_id": learner.id }))
        .await
        .status(201)
        .await;
    let invitee = address("invitee");
    let invitation = enroll(&teacher, &id, json!({ "email": invitee }))
        .await
        .status(202)
        .await;
    mailbox().message_to(&invitee).await;
    let inv = invitation["id"].as_str().unwrap();
    // Inviting again changes the role of the pending invitation, and mails nothing.
    let again = enroll(
        &teacher,
        &id,
        json!({ "email": invitee, "role": "instructor" }),
    )
    .await
    .status(202)
    .await;
    assert_eq!(again["id"], inv);
    assert_eq!(again["role"], "instructor");
    enroll(&teacher, &id, json!({ "email": "not-an-email" }))
        .await
        .problem(422, "invalid_email")
        .await;

    let list = pending(&app, &teacher, &id).await;
    assert_eq!(list.len(), 1);
    assert_eq!(list[0]["role"], "instructor");
    teacher
        .get(&format!("/v1/courses/{id}/invitations?limit=0"))
        .await
        .problem(400, "invalid_limit")
        .await;

    let resend = format!("/v1/courses/{id}/invitations/{inv}/resend");
    let res = teacher.post(&resend, &json!({})).await.response();
    let wait: u64 = res.headers()["retry-after"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!((1..=61).contains(&wait), "{wait}");
    assert_problem(res, 429, "too_many_emails").await;
    clock.advance(chrono::Duration::seconds(61));
    teacher.post(&resend, &json!({})).await.status(202).await;
    let mail = mailbox().message_to(&invitee).await;
    assert!(
        mail["text"].as_str().unwrap().contains("as an instructor"),
        "{mail}"
    );

    // Neither a learner of the course nor an instructor of another sees or touches them.
    let revoke = format!("/v1/courses/{id}/invitations/{inv}");
    let list_path = format!("/v1/courses/{id}/invitations");
    for (who, status, code) in [
        (&learner, 403, "forbidden"),
        (&other, 404, "course_not_found"),
    ] {
        let res = get_as(&app, &who.access, &list_path).await;
        assert_problem(res, status, code).await;
        let res = post_as(&app, &who.access, &resend, &json!({})).await;
        assert_problem(res, status, code).await;
        let res = bearer(&app, reqwest::Method::DELETE, &revoke, &who.access)
            .send()
            .await
            .unwrap();
        assert_problem(res, status, code).await;
    }
    let res = bearer(&app, reqwest::Method::DELETE, &revoke, &teacher.access)
        .send()
        .await
        .unwrap();
    expect_status(res, 204).await;
    let res = bearer(&app, reqwest::Method::DELETE, &revoke, &teacher.access)
        .send()
        .await
        .unwrap();
    assert_problem(res, 404, "invitation_not_found").await;
    teacher
        .post(&resend, &json!({}))
        .await
        .problem(404, "invitation_not_found")
        .await;

    // A revoked invitation is claimed by nobody.
    register_unverified(&app, &invitee).await;
    let verified =
        follow_verification_link(&app, &link_in(&mailbox().message_to(&invitee).await)).await;
    assert_eq!(verified["enrolled_in"], json!([]));
    assert!(
        !roster_emails(&app, &teacher, &id)
            .await
            .contains(&invitee.to_lowercase())
    );
}

#[tokio::test]
async fn the_invitation_list_comes_in_bounded_pages() {
    let app = TestApp::spawn().await;
    let teacher = app.person("teacher@example.org", "instructor").await;
    let id = course(&app, &teacher, "Pages").await;
    let mut csv = String::from("email,role\n");
    for i in 0..5 {
        csv.push_str(&format!("p{i}@example.org,learner\n"));
    }
    let res = csv_post(&app, &teacher, &id, csv).send().await.unwrap();
    assert_eq!(expect_status(res, 200).await["summary"]["invited"], 5);
    let mut seen = Vec::new();
    let mut after = String::new();
    loop {
        let page = teacher
            .get(&format!("/v1/courses/{id}/invitations?limit=2{after}"))
            .await
            .status(200)
            .await;
        let items = page["items"].as_array().unwrap();
        assert!(items.len() <= 2);
        seen.extend(
            items
                .iter()
                .map(|i| i["email"].as_str().unwrap().to_string()),
        );
        match page["next_after"].as_str() {
            Some(next) => after = format!("&after={next}"),
            None => break,
        }
    }
    let expected: Vec<String> = (0..5).map(|i| format!("p{i}@example.org")).collect();
    let mut sorted = seen.clone();
    sorted.sort();
    assert_eq!(sorted, expected);
}

#[tokio::test]
async fn an_smtp_server_that_is_down_loses_no_invitation() {
    let clock = Clock::manual(Utc::now());
    // Nothing listens on port 9 of loopback: every send fails (and is logged).
    let app = TestApp::spawn_configured({
        let clock = clock.clone();
        move |s| {
            s.clock = clock;
            s.mailer =
                quizd::mail::Mailer::smtp("smtp://127.0.0.1:9", "quizd <q@example.org>").unwrap();
        }
    })
    .await;
    let teacher = app.person("teacher@example.org", "instructor").await;
    let id = course(&app, &teacher, "Offline").await;
    let invitation = enroll(&teacher, &id, json!({ "email": "lost@example.org" }))
        .await
        .status(202)
        .await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(pending(&app, &teacher, &id).await.len(), 1);
    clock.advance(chrono::Duration::minutes(2));
    teacher
        .post(
            &format!(
                "/v1/courses/{id}/invitations/{}/resend",
                invitation["id"].as_str().unwrap()
            ),
            &json!({}),
        )
        .await
        .status(202)
        .await;
    assert_eq!(pending(&app, &teacher, &id).await.len(), 1);
}

#[tokio::test]
async fn without_smtp_quizd_says_so_at_start_up_and_the_link_in_its_log_verifies() {
    use std::io::{BufRead, BufReader};
    use std::process::{Command, Stdio};
    let app = TestApp::spawn_empty().await;
    let mut child = Command::new(env!("CARGO_BIN_EXE_quizd"))
        .args(["serve", "--bind", "127.0.0.1:0"])
        .env("DATABASE_URL", app.db_url())
        .env_remove("QUIZD_SMTP_URL")
        .env("RUST_LOG", "info")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    let logs = std::thread::spawn(move || std::io::read_to_string(stderr).unwrap());
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let first = lines.next().unwrap().unwrap();
    let base = first
        .strip_prefix("quizd listening on ")
        .unwrap()
        .to_string();
    let banner: Vec<String> = lines.by_ref().take(3).map(Result::unwrap).collect();
    assert!(
        banner.iter().any(|l| l.contains("no --smtp-url")),
        "{banner:?}"
    );
    std::thread::spawn(move || for _ in lines {});

    let res = reqwest::Client::new()
        .post(format!("{base}/v1/auth/register"))
        .json(&json!({"email": "logged@example.org", "display_name": "Logged", "password": crate::support::PASSWORD}))
        .send()
        .await
        .unwrap();
    expect_status(res, 201).await;
    unsafe {
        libc::kill(child.id() as i32, libc::SIGTERM);
    }
    child.wait().unwrap();
    let logs = logs.join().unwrap();
    let at = logs
        .find(&format!("{base}/v1/email-verifications/"))
        .unwrap_or_else(|| panic!("no link in the log:\n{logs}"));
    let link: String = logs[at..]
        .chars()
        .take_while(|c| !c.is_whitespace())
        .collect();
    // The same database, served by the test's quizd: the logged link verifies the address.
    let path = link.strip_prefix(&base).unwrap();
    let res = app.client.post(app.url(path)).send().await.unwrap();
    assert_eq!(expect_status(res, 200).await["email"], "logged@example.org");
}

#[tokio::test]
async fn an_account_has_at_most_five_thousand_invitation_mails_a_day_resends_included() {
    let clock = Clock::manual(Utc::now());
    let app = TestApp::spawn_with_clock(clock.clone()).await;
    let teacher = app.person("teacher@example.org", "instructor").await;
    let id = course(&app, &teacher, "Busy").await;
    // 4,999 mailed 23 hours ago, behind the API's back.
    sqlx::query("INSERT INTO mail_volume (sender_id, sent_at, messages) VALUES ($1, $2, 4999)")
        .bind(teacher.id)
        .bind(clock.now() - chrono::Duration::hours(23))
        .execute(&app.pool)
        .await
        .unwrap();
    let last = enroll(&teacher, &id, json!({ "email": "last@example.org" }))
        .await
        .status(202)
        .await;
    let res = enroll(&teacher, &id, json!({ "email": "one-more@example.org" }))
        .await
        .response();
    // The 4,999 leave the day's window in an hour.
    let wait: u32 = res.headers()["retry-after"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!((3500..=3601).contains(&wait), "{wait}");
    assert_problem(res, 429, "too_many_invitations").await;
    let res = csv_post(
        &app,
        &teacher,
        &id,
        "email,role\none-more@example.org,learner\n".into(),
    )
    .send()
    .await
    .unwrap();
    assert_problem(res, 429, "too_many_invitations").await;
    // A resend is a mail too.
    clock.advance(chrono::Duration::minutes(2));
    teacher
        .post(
            &format!(
                "/v1/courses/{id}/invitations/{}/resend",
                last["id"].as_str().unwrap()
            ),
            &json!({}),
        )
        .await
        .problem(429, "too_many_invitations")
        .await;
    // Enrolling people who have accounts mails nothing and is not limited.
    let learner = app.person("learner@example.org", "learner").await;
    let res = csv_post(
        &app,
        &teacher,
        &id,
        format!("email,role\n{},learner\n", learner.email),
    )
    .send()
    .await
    .unwrap();
    assert_eq!(expect_status(res, 200).await["summary"]["enrolled"], 1);
    // A day later the budget is back.
    clock.advance(chrono::Duration::hours(2));
    enroll(&teacher, &id, json!({ "email": "one-more@example.org" }))
        .await
        .status(202)
        .await;
}

/// `POST /v1/auth/register` for `email` from a client that names another host in `Host` and
/// `X-Forwarded-Host`.
async fn register_with_forged_host(app: &TestApp, email: &str) {
    let res = app
        .client
        .post(app.url("/v1/auth/register"))
        .header("host", "evil.example")
        .header("x-forwarded-host", "evil.example")
        .header("x-forwarded-proto", "https")
        .json(&json!({"email": email, "display_name": "Someone", "password": crate::support::PASSWORD}))
        .send()
        .await
        .unwrap();
    expect_status(res, 201).await;
}

/// A teacher's course, and `invitee` invited to it by a request that names `evil.example` as
/// its host.
async fn invite_with_forged_host(app: &TestApp, name: &str, invitee: &str) {
    let teacher = app.person(&address("teacher"), "instructor").await;
    let id = course(app, &teacher, name).await;
    let res = teacher
        .request(
            reqwest::Method::POST,
            &format!("/v1/courses/{id}/enrollments"),
        )
        .header("host", "evil.example")
        .header("x-forwarded-host", "evil.example")
        .json(&json!({ "email": invitee }))
        .send()
        .await
        .unwrap();
    expect_status(res, 202).await;
}

#[tokio::test]
async fn mail_links_come_from_the_public_url_and_never_from_a_forged_host() {
    // With --public-url, the link is on it whatever the request says.
    let app = spawn_with_mail(|_| {}).await;
    let who = address("forged");
    register_with_forged_host(&app, &who).await;
    let mail = mailbox().message_to(&who.to_lowercase()).await;
    assert!(!mail.to_string().contains("evil.example"), "{mail}");
    let link = link_in(&mail);
    assert!(
        link.starts_with(&format!("{}/v1/email-verifications/", app.base)),
        "{link}"
    );
    let invitee = address("invitee");
    invite_with_forged_host(&app, "Forged", &invitee).await;
    let mail = mailbox().message_to(&invitee.to_lowercase()).await;
    assert!(!mail.to_string().contains("evil.example"), "{mail}");
    assert!(mail["text"].as_str().unwrap().contains(&app.base), "{mail}");

    // Without one, nothing that carries a link is mailed: the link goes to the log only.
    let bare = spawn_with_mail_and_no_public_url().await;
    let victim = address("victim");
    register_with_forged_host(&bare, &victim).await;
    let invitee = address("invitee");
    invite_with_forged_host(&bare, "No public URL", &invitee).await;
    mailbox()
        .nothing_to(&victim.to_lowercase(), Duration::from_secs(2))
        .await;
    mailbox()
        .nothing_to(&invitee.to_lowercase(), Duration::ZERO)
        .await;
}

#[tokio::test]
async fn an_invitation_mail_has_a_fixed_subject_in_the_inviters_language_and_the_title_only_in_its_body()
 {
    let app = spawn_with_mail(|_| {}).await;
    let teacher = app.person(&address("teacher"), "instructor").await;
    let title = "URGENT: your account is locked, reply with your password";
    let id = course(&app, &teacher, title).await;
    let invitee = address("invitee");
    enroll(&teacher, &id, json!({ "email": invitee }))
        .await
        .status(202)
        .await;
    let mail = mailbox().message_to(&invitee.to_lowercase()).await;
    assert_eq!(mail["subject"], "You are invited to a course on quizd");
    assert!(mail["text"].as_str().unwrap().contains(title), "{mail}");

    teacher
        .patch("/v1/me", &json!({ "locale": "id" }))
        .await
        .status(200)
        .await;
    let other = address("other");
    enroll(&teacher, &id, json!({ "email": other }))
        .await
        .status(202)
        .await;
    let mail = mailbox().message_to(&other.to_lowercase()).await;
    assert_eq!(mail["subject"], "Anda diundang ke sebuah kursus di quizd");
}
