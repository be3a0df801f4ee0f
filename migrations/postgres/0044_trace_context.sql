-- W3C trace context (traceparent). The trace id (32 lowercase hex digits)
-- of the request that caused a state change is kept on its event row, and
-- archived with it; null for changes no request caused (jobs) and for
-- every row written before this.
ALTER TABLE events ADD COLUMN trace_id TEXT;
ALTER TABLE events_archive ADD COLUMN trace_id TEXT;
-- A webhook message caused by a traced request keeps the trace id and the
-- trace flags (only bit 0, sampled, is kept), so every attempt, also one
-- after a restart, sends a traceparent in that trace.
ALTER TABLE outbox ADD COLUMN trace_id TEXT;
ALTER TABLE outbox ADD COLUMN trace_flags BIGINT;
