-- Sign-in failures count per account and address pair (issue 12): the
-- limit that one address cannot use to lock an account out for everyone.
CREATE INDEX login_attempts_pair_idx ON login_attempts (staff_name, address, at);
