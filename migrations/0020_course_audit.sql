-- Course changes on the audit record: a person unenrolled (their attempts stay), a course
-- archived or made active again.
ALTER TABLE audit_log DROP CONSTRAINT audit_log_action_check;
ALTER TABLE audit_log ADD CONSTRAINT audit_log_action_check CHECK (action IN (
    'role_changed', 'coauthor_added', 'coauthor_removed', 'key_read',
    'lti_registration_created', 'lti_registration_updated',
    'lti_registration_deleted', 'account_erased',
    'override_set', 'override_removed', 'grade_overridden', 'assignment_regraded',
    'enrollment_removed', 'course_archived', 'course_restored'));
