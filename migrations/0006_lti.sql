-- LTI 1.3: the platforms (LMSs) registered with quizd, quizd's own signing keys, logins in
-- flight, and the links from LMS contexts and resource links to quizd's courses and assignments.

-- quizd's RSA key pairs. One signs (retired_at NULL); retired ones stay published for a while.
CREATE TABLE lti_keys (
    kid         text PRIMARY KEY,
    private_pem text NOT NULL,
    -- the public key as JWK members: base64url modulus and exponent
    n           text NOT NULL,
    e           text NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    retired_at  timestamptz
);
CREATE UNIQUE INDEX lti_keys_one_active ON lti_keys ((retired_at IS NULL)) WHERE retired_at IS NULL;

CREATE TABLE lti_registrations (
    id              uuid PRIMARY KEY,
    title           text NOT NULL CHECK (length(title) BETWEEN 1 AND 200),
    issuer          text NOT NULL,
    client_id       text NOT NULL,
    deployment_ids  text[] NOT NULL CHECK (cardinality(deployment_ids) > 0),
    -- OIDC authorization endpoint: where a login is redirected
    auth_endpoint   text NOT NULL,
    -- OAuth 2 token endpoint, and the audience of client assertions when it is not that URL
    token_endpoint  text NOT NULL,
    token_audience  text,
    -- the platform's keys: a JWKS URL (fetched, cached, refetched on an unknown kid) or inline
    jwks_url        text,
    jwks            jsonb,
    jwks_cache      jsonb,
    jwks_fetched_at timestamptz,
    created_at      timestamptz NOT NULL DEFAULT now(),
    updated_at      timestamptz NOT NULL DEFAULT now(),
    UNIQUE (issuer, client_id),
    CHECK ((jwks_url IS NULL) <> (jwks IS NULL))
);

-- An OIDC login in flight: state (stored hashed) and nonce, single use, minutes long, bound to
-- the browser that started it by a cookie (stored hashed).
CREATE TABLE lti_login_states (
    state_hash      bytea PRIMARY KEY,
    registration_id uuid NOT NULL REFERENCES lti_registrations (id) ON DELETE CASCADE,
    nonce           text NOT NULL,
    browser_hash    bytea NOT NULL,
    target_link_uri text NOT NULL,
    deployment_id   text,
    created_at      timestamptz NOT NULL DEFAULT now(),
    expires_at      timestamptz NOT NULL
);
CREATE INDEX lti_login_states_expiry ON lti_login_states (expires_at);

-- Nonces of accepted launches, kept until their id_token expires: a nonce is used once.
CREATE TABLE lti_used_nonces (
    registration_id uuid NOT NULL REFERENCES lti_registrations (id) ON DELETE CASCADE,
    nonce           text NOT NULL,
    expires_at      timestamptz NOT NULL,
    PRIMARY KEY (registration_id, nonce)
);

-- An LMS context (course section) is a quizd course. Ids are unique per deployment.
CREATE TABLE lti_contexts (
    registration_id uuid NOT NULL REFERENCES lti_registrations (id) ON DELETE CASCADE,
    deployment_id   text NOT NULL,
    context_id      text NOT NULL,
    course_id       uuid NOT NULL UNIQUE REFERENCES courses (id) ON DELETE CASCADE,
    -- Names and Role Provisioning Services, as the latest launch gave it
    memberships_url text,
    created_at      timestamptz NOT NULL DEFAULT now(),
    updated_at      timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (registration_id, deployment_id, context_id)
);

-- An LMS resource link (a placement of a quiz) is a quizd assignment.
CREATE TABLE lti_resource_links (
    registration_id  uuid NOT NULL REFERENCES lti_registrations (id) ON DELETE CASCADE,
    deployment_id    text NOT NULL,
    resource_link_id text NOT NULL,
    assignment_id    uuid NOT NULL UNIQUE REFERENCES assignments (id) ON DELETE CASCADE,
    -- Assignment and Grade Services, as the latest launch gave them
    lineitem_url     text,
    lineitems_url    text,
    ags_scopes       text[] NOT NULL DEFAULT '{}',
    created_at       timestamptz NOT NULL DEFAULT now(),
    updated_at       timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (registration_id, deployment_id, resource_link_id)
);

-- A Deep Linking request waiting for the instructor's choice.
CREATE TABLE lti_deep_links (
    id              uuid PRIMARY KEY,
    registration_id uuid NOT NULL REFERENCES lti_registrations (id) ON DELETE CASCADE,
    deployment_id   text NOT NULL,
    user_id         uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    return_url      text NOT NULL,
    -- opaque to quizd; returned as the platform sent it
    data            text,
    accept_multiple boolean NOT NULL,
    accept_lineitem boolean NOT NULL,
    created_at      timestamptz NOT NULL DEFAULT now(),
    expires_at      timestamptz NOT NULL,
    used_at         timestamptz
);

-- The one-time code a launch hands to the browser; traded once, within a minute, for tokens.
CREATE TABLE lti_launch_codes (
    code_hash     bytea PRIMARY KEY,
    user_id       uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    destination   text NOT NULL CHECK (destination IN ('attempt', 'analytics', 'deep_link')),
    course_id     uuid REFERENCES courses (id) ON DELETE CASCADE,
    assignment_id uuid REFERENCES assignments (id) ON DELETE CASCADE,
    deep_link_id  uuid REFERENCES lti_deep_links (id) ON DELETE CASCADE,
    created_at    timestamptz NOT NULL DEFAULT now(),
    expires_at    timestamptz NOT NULL
);

-- What the grade-passback worker looks for.
CREATE INDEX outbox_lti_pending ON outbox (next_attempt_at)
    WHERE delivered_at IS NULL AND topic IN ('attempt.finished', 'attempt.regraded');
