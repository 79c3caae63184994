-- Images in questions (issue #21, item 11): each file once, named by the SHA-256 of its bytes.
-- A quiz version's content refers to an image by that hash (with its type and alt text); the
-- rows are written in the import's transaction, and never changed: equal bytes, equal name.
-- Who may read one is decided by the content that refers to it (the quiz view, an attempt),
-- never by this table.
CREATE TABLE media (
    sha256       text PRIMARY KEY CHECK (sha256 ~ '^[0-9a-f]{64}$'),
    content_type text NOT NULL
                 CHECK (content_type IN ('image/png', 'image/jpeg', 'image/gif', 'image/webp')),
    size         integer NOT NULL CHECK (size BETWEEN 1 AND 2097152),
    bytes        bytea NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT now(),
    CHECK (octet_length(bytes) = size)
);
