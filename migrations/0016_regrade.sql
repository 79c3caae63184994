-- Regrading: an assignment moved to another version of its quiz, every attempt's responses
-- graded again against the new key (see grades::regrade). The grade changes are grade events
-- (kind 'regrade', migration 0012); the LMS hears of them through the outbox
-- ('attempt.regraded'); the regrade itself is an audit entry.

-- When the attempt was last regraded (its learner sees a note); NULL: never.
ALTER TABLE attempts ADD COLUMN regraded_at timestamptz;

ALTER TABLE audit_log DROP CONSTRAINT audit_log_action_check;
ALTER TABLE audit_log ADD CONSTRAINT audit_log_action_check CHECK (action IN (
    'role_changed', 'coauthor_added', 'coauthor_removed', 'key_read',
    'lti_registration_created', 'lti_registration_updated',
    'lti_registration_deleted', 'account_erased',
    'override_set', 'override_removed', 'grade_overridden', 'assignment_regraded'));
