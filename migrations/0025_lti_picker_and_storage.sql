-- The Deep Linking response quizd signed for a request, kept as a hash: the front-end posts
-- it back through quizd (`POST /v1/lti/deep-link/{id}/return`), whose page forwards exactly
-- that response, and no other, to the platform's return URL.
ALTER TABLE lti_deep_links ADD COLUMN response_hash bytea;

-- A login started with `lti_storage_target` (LTI client-side postMessage storage): the frame
-- the state's secret was put in, in the platform's page, and the hash of that secret. Its
-- launch proves the browser by the state cookie where it comes back, else by that secret,
-- read back from the platform's storage.
ALTER TABLE lti_login_states ADD COLUMN storage_target text, ADD COLUMN storage_hash bytea;
