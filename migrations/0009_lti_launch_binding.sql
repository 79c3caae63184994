-- A launch's one-time code is bound to the browser the launch redirected: the hash of a
-- secret in a cookie set with the redirect. A link carrying someone else's code then signs
-- nobody in (login CSRF). Codes live a minute; any issued before this change are dropped.
DELETE FROM lti_launch_codes;
ALTER TABLE lti_launch_codes ADD COLUMN browser_hash bytea NOT NULL;

