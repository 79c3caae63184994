-- Sign-in limits shared by every instance (#17): the failure counts that `auth::ratelimit`
-- kept in each process's memory, kept here so that guesses spread over several quizd
-- instances meet the limits at the same try as on one.

-- What a row counts: failures of one (account, client address), of one account from all
-- addresses, of one address over all accounts; an (account, address) that signed in (which
-- the per-account limit lets through for 30 days); or the sign-ups of one address.
CREATE TYPE sign_in_limit AS ENUM ('pair', 'account', 'address', 'known', 'signup');

-- One row per key. `key` is a keyed hash (HMAC-SHA256 with a key derived from the access-token
-- secret, truncated to 16 bytes) of the account as typed (trimmed, lower-cased) and the client
-- address: no email or address is stored. `until` is, for a failure count, the generic cell
-- rate algorithm's one instant per key (when the count is back to zero; each failure moves it
-- `every` seconds past max(until, now)); for a known pair, when it is forgotten. A row whose
-- `until` has passed means what no row means; such rows are deleted as rows are written (each
-- write deletes up to 16 of them), so the table holds the live keys and at most a few more.
CREATE TABLE sign_in_limits (
    kind sign_in_limit NOT NULL,
    key bytea NOT NULL CHECK (length(key) = 16),
    until timestamptz NOT NULL,
    PRIMARY KEY (kind, key)
);

CREATE INDEX sign_in_limits_until ON sign_in_limits (until);
