# The API's error messages (error.rs), written for a customer.
api-error-invalid_request = Something in the request is not valid; please check it and try again.
api-error-invalid_field = The “{ $field }” in the request is not valid; please check it and try again.
api-error-unauthorized = Missing or invalid bearer token.
api-error-forbidden = This action is not allowed for you.
api-error-not_found = Nothing was found for this request.
api-error-rate_limited = Too many requests; please try again shortly.
api-error-unavailable = The service is unavailable right now and nothing was changed; please try again shortly.
api-error-idempotency_key_reused = This Idempotency-Key was used for a different request.
api-error-idempotency_in_progress = The same request is still being processed; check again shortly.
api-error-refused = This change is not allowed in the current state.
