-- A launch refused inside the platform's frame (its state cookie dropped, its login expired or
-- posted twice) offers to start the login again in a window of its own: that needs what the
-- platform's login initiation said, which the launch post does not carry. The login hint and
-- the message hint are kept with the state for that (both opaque to quizd; the platform sent
-- them through the browser). A login is marked used instead of deleted, so that a second post
-- of its launch is told "used" and offered the same; the expired-login purge removes it.
ALTER TABLE lti_login_states
    ADD COLUMN login_hint text,
    ADD COLUMN message_hint text,
    ADD COLUMN used_at timestamptz;
