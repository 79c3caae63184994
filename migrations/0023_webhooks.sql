-- Webhooks (issue #18): admins subscribe URLs to public topics; quizd POSTs each event to each
-- subscription that wants it, signed as Standard Webhooks says (HMAC-SHA256 over
-- `{id}.{timestamp}.{body}`). Delivery is the outbox's (migration 0022): a subscription is the
-- consumer `webhook:<id>`, its rows in `event_consumers` are the outbox topics its public
-- topics map to (`src/events/webhooks`), and its deliveries are `deliveries` rows like every
-- other consumer's (backoff, park, retry by an admin).
CREATE TABLE webhook_subscriptions (
    id          uuid PRIMARY KEY,
    url         text NOT NULL CHECK (length(url) <= 2048),
    -- public topics (`attempt.finished`, `grade.changed`, …)
    topics      text[] NOT NULL CHECK (cardinality(topics) > 0),
    description text NOT NULL DEFAULT '',
    created_by  uuid REFERENCES users (id) ON DELETE SET NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    updated_at  timestamptz NOT NULL DEFAULT now(),
    -- set: nothing is queued for it, and what is queued waits
    disabled_at timestamptz
);

-- The signing secrets, apart from the subscriptions, so that no listing reads them. A rotation
-- keeps the secret it replaces valid until `previous_expires_at`: deliveries until then carry
-- both signatures, so a receiver can change its secret at its own pace.
CREATE TABLE webhook_secrets (
    subscription_id     uuid PRIMARY KEY REFERENCES webhook_subscriptions (id) ON DELETE CASCADE,
    -- `whsec_` + base64 of 32 random bytes (the bytes are the HMAC key)
    secret              text NOT NULL,
    previous_secret     text,
    previous_expires_at timestamptz,
    rotated_at          timestamptz,
    CHECK ((previous_secret IS NULL) = (previous_expires_at IS NULL))
);

-- A subscription takes the events written from its creation on (and a topic added later, or a
-- subscription enabled again, those from then on), not the backlog not yet dispatched: a
-- consumer row with `since` takes only events created at or after it. NULL (grade passback,
-- xAPI): every event not yet dispatched, as before.
ALTER TABLE event_consumers ADD COLUMN since timestamptz;

-- Changes to subscriptions and their secrets are on the audit record.
ALTER TABLE audit_log DROP CONSTRAINT audit_log_action_check;
ALTER TABLE audit_log ADD CONSTRAINT audit_log_action_check CHECK (action IN (
    'role_changed', 'coauthor_added', 'coauthor_removed', 'key_read',
    'lti_registration_created', 'lti_registration_updated',
    'lti_registration_deleted', 'account_erased',
    'override_set', 'override_removed', 'grade_overridden', 'assignment_regraded',
    'enrollment_removed', 'course_archived', 'course_restored',
    'webhook_created', 'webhook_updated', 'webhook_deleted', 'webhook_secret_rotated'));
