"""Schemathesis hooks for `.ci/fuzz`.

The OpenAPI document (`src/api/openapi.rs`) states every input rule that
JSON Schema can state: types, required fields, ranges, lengths, words,
patterns and the rules between fields (`oneOf` / `anyOf`). A few rules
depend on the clock, on stored state or compare two values, which JSON
Schema cannot say; a schema-valid request that breaks one of them is
refused with 400 `invalid_request` naming the field, as API.md asks.
Schemathesis's `positive_data_acceptance` check would call those refusals
failures. This hook drops exactly those failures, by the field and the
words of the refusal, and nothing else: every other failure of every
check fails the run.
"""

import ast
import json
import os
import re
import threading
import uuid

import schemathesis

# CPython 3.11.7 (the machine's) keeps the AST constructor's recursion
# depth in state shared by every thread, so two threads parsing at once
# can fail with "SystemError: AST constructor recursion depth mismatch"
# (fixed in later CPython releases). Schemathesis runs two workers, and
# Hypothesis parses a lambda's source each time it describes a strategy,
# CI's runs stopped with that runtime error twice in one day, on
# different operations (POST /orders, GET /users/{user_id}/coupons). One
# parse at a time keeps the workers apart there.
_AST_PARSE = ast.parse
_AST_PARSE_LOCK = threading.Lock()


def _parse_one_at_a_time(*args, **kwargs):
    with _AST_PARSE_LOCK:
        return _AST_PARSE(*args, **kwargs)


ast.parse = _parse_one_at_a_time

# (field, words of the English message) of the refusals a schema cannot
# foresee. The field is a regular expression (preset fields carry an index).
RULES_NO_SCHEMA_CAN_STATE = [
    # The clock: "in the future", "after now".
    ("valid_until", "must be after valid_from (or after now"),
    ("claim_ends_at", "must be in the future"),
    ("at", "must not be more than"),
    # Two values compared.
    ("valid_until", "must be after valid_from"),
    ("expiry_spread_seconds", "must be shorter than the validity"),
    ("final_payment_ends_at", "must be after final_payment_starts_at"),
    ("deposit_cents", "at most total_cents"),
    # One coupon or several, not both (`coupon_id` may be null, which a
    # schema's `not: {required: [...]}` would refuse).
    ("coupon_ids", "send coupon_id or coupon_ids, not both"),
    # An order's lines: ids unique in the order, the lines' total above 0
    # and within the money limit, each line's amount within it too.
    (r"lines\[\d+\]\.line_id", "names a line twice"),
    ("lines", "the lines' total must be"),
    (r"lines\[\d+\]\.unit_price_cents", "quantity × unit_price_cents must be at most"),
    ("created_to", "must be after created_from"),
    ("to", "must be after"),
    ("to", "a report covers at most 366 days"),
    ("from", "must not be after to"),
    # Text after trimming, normalizing or parsing: a reason of spaces, a
    # code prefix of spaces or dashes, a CSV file with no line to work on.
    ("reason", "is required, 1-500 characters"),
    ("prefix", "may only hold the digits 2-9 and the letters"),
    ("body", "the file has no line to work on"),
    ("body", "the file must not contain the NUL character"),
    # A report day in the business calendar (years the server's calendar
    # holds; the schema's `format: date` admits any year).
    (r"from|to", "must be a date as YYYY-MM-DD"),
    (r"presets\[\d+\]\.value_cents", "is above support's per-coupon cap"),
    (r"presets\[\d+\]\.reason", "another preset has the same reason"),
    (r"presets\[\d+\]\.id", "names a preset twice"),
    # Stored state: ids and cursors the server handed out.
    (r"presets\[\d+\]\.id", "is not a preset of the current version"),
    ("preset_id", "is not a preset of the compensation rules in force"),
    ("cursor", "is not a"),
    (r"lines\[\d+\]\.line_id", "is not a line of order"),
    # A format character beyond the Basic Multilingual Plane (U+E0001,
    # U+1D173, ...): the key pattern names those of the BMP, but a pattern
    # without the `u` flag cannot name the others.
    (r"user_id|order_no|refund_id|shop_id|skus|exclude_skus|lines\[\d+\]\.(line_id|sku|shop_id)",
     "format characters"),
    # A time with an offset that crosses 9999-12-31 in UTC.
    (r"valid_from|valid_until|claim_ends_at|final_payment_starts_at|final_payment_ends_at|at",
     "must be between 1970 and 9999"),
]


def _error(response):
    try:
        body = json.loads(response.content)
    except (ValueError, TypeError):
        return None
    if not isinstance(body, dict) or not isinstance(body.get("error"), dict):
        return None
    return body["error"]


def _is_rule_refusal(response):
    if response.status_code != 400:
        return False
    error = _error(response)
    if error is None or error.get("code") != "invalid_request":
        return False
    field = error.get("field") or ""
    message = error.get("message") or ""
    return any(
        re.fullmatch(f, field) and words in message
        for f, words in RULES_NO_SCHEMA_CAN_STATE
    )


def _is_key_reuse(response):
    # Two generated requests that happen to carry the same Idempotency-Key
    # (Hypothesis draws short keys often): 422 `idempotency_key_reused` is
    # the documented answer to the second, whatever its body.
    if response.status_code != 422:
        return False
    error = _error(response)
    return error is not None and error.get("code") == "idempotency_key_reused"


# What the server takes as an Idempotency-Key (the document's pattern).
_VALID_KEY = re.compile(r"[!-~]([\t -~]*[!-~])?")


@schemathesis.hook
def before_call(context, case, kwargs):
    # Hypothesis draws the same short keys again and again ("0", "A"), so
    # most writes would meet a key an earlier, different request used and
    # get 422 `idempotency_key_reused` without reaching the operation. A
    # valid key gets a unique suffix (still valid: at most 255 visible
    # characters); an invalid one is left as drawn, to be refused.
    # Only cases meant to be valid: changing a negative case's headers
    # would make schemathesis re-read it as positive (and, for a case
    # missing its Authorization header, send the header after all).
    if case.meta is None or case.meta.generation.mode.is_negative:
        return
    headers = case.headers
    if not headers:
        return
    for name in list(headers):
        key = headers[name]
        if (
            name.lower() == "idempotency-key"
            and isinstance(key, str)
            and len(key) <= 200
            and _VALID_KEY.fullmatch(key)
        ):
            headers[name] = f"{key}-{uuid.uuid4().hex}"


def _log(response):
    # FUZZ_HOOK_LOG: a file that gets each dropped refusal's code, field and
    # message, so a run can show what was dropped and how often.
    path = os.environ.get("FUZZ_HOOK_LOG")
    if path:
        error = _error(response) or {}
        with open(path, "a", encoding="utf-8") as f:
            f.write(f"{error.get('code')}\t{error.get('field')}\t{error.get('message')}\n")


@schemathesis.hook
def filter_failure(context, failure, case, response):
    # A `text/csv` body is a string whatever bytes it holds: a "negative"
    # case that serializes an object into it is still a CSV file, read
    # line by line (bad lines are reported in the job, not refused).
    if (
        type(failure).__name__ == "AcceptedNegativeData"
        and "text/csv" in str(getattr(case, "media_type", "") or "")
    ):
        return False
    # A schema-violating body too large for the server (many lines, each
    # padded with unknown keys) is refused before it is read: 413 is a
    # refusal, which schemathesis's list of rejections leaves out.
    if type(failure).__name__ == "AcceptedNegativeData" and response is not None \
            and response.status_code == 413:
        return False
    if type(failure).__name__ != "RejectedPositiveData":
        return True
    if _is_rule_refusal(response) or _is_key_reuse(response):
        _log(response)
        return False
    return True
