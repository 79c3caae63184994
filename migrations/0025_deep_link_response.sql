-- The Deep Linking response quizd signed for a request, kept as a hash: the front-end posts
-- it back through quizd (`POST /v1/lti/deep-link/{id}/return`), whose page forwards exactly
-- that response, and no other, to the platform's return URL.
ALTER TABLE lti_deep_links ADD COLUMN response_hash bytea;
