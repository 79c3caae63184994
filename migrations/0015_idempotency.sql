-- Safe retries (#22): the first response to a creating POST sent with an `Idempotency-Key`,
-- replayed to a retry of the same request by the same person for 24 hours.

-- One row per (person, key). The row is inserted before the request runs (with no response):
-- of two identical requests at once, only the one whose insert wins runs; the other sees the
-- key in flight. `request_hash` is SHA-256 of the method, path and body: the same key with
-- another request is refused. Rows older than 24 hours are purged as new keys come in.
CREATE TABLE idempotency_keys (
    user_id uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    key text NOT NULL CHECK (length(key) BETWEEN 1 AND 255),
    request_hash bytea NOT NULL CHECK (length(request_hash) = 32),
    created_at timestamptz NOT NULL,
    -- The response, once the request has finished; NULL while it runs.
    response_status smallint CHECK (response_status BETWEEN 200 AND 299),
    response_content_type text,
    response_location text,
    response_body bytea CHECK (length(response_body) <= 65536),
    PRIMARY KEY (user_id, key)
);

CREATE INDEX idempotency_keys_created_at ON idempotency_keys (created_at);
