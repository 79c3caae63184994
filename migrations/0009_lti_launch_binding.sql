-- A launch's one-time code is bound to the browser the launch redirected: the hash of a
-- secret in a cookie set with the redirect. A link carrying someone else's code then signs
-- nobody in (login CSRF). Codes live a minute; any issued before this change are dropped.
DELETE FROM lti_launch_codes;
ALTER TABLE lti_launch_codes ADD COLUMN browser_hash bytea NOT NULL;

-- Hosts, besides those of its own endpoints, that a platform's services (AGS line items,
-- NRPS memberships) may be on; quizd calls no other.
ALTER TABLE lti_registrations ADD COLUMN service_hosts text[] NOT NULL DEFAULT '{}';
