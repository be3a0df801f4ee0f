this-request-came-from-another-site = This request came from another site and was refused.
the-form-has-expired-security-token = The form has expired (security token mismatch). Go back, reload and try again.
not-found = Not found
the-database-is-unavailable-try-again = The database is unavailable; try again shortly.
the-sign-in-form-expired-please = The sign-in form expired; please enter your details again.
wrong-name-or-password = Wrong name or password.
too-many-failed-attempts-try-again = Too many failed attempts; try again in 15 minutes.
you-are-signed-out = You are signed out.
