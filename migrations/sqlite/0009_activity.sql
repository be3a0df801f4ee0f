-- Customer activity that leaves no coupon or order behind: the last time a
-- valid self-check link opened the page. The reminder planner's sms tier
-- counts it as activity (with the last claim and the last order), read by
-- primary key. Identical in migrations/sqlite and migrations/postgres.
CREATE TABLE user_activity (
    user_id            TEXT PRIMARY KEY,
    last_self_check_at BIGINT NOT NULL
);
