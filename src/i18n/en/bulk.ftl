# Bulk issue (定向发券) and bulk void (批量作废): src/web/bulk.rs, domain::bulk.

## Job kinds (domain::bulk::JobKind)
bulk-kind-bulk_issue = Bulk issue
bulk-kind-bulk_void = Bulk void

## Job statuses (domain::bulk::JobStatus)
bulk-status-loading = Reading the list
bulk-status-running = Running
bulk-status-done = Finished
bulk-status-failed = Job failed

## Why a line was skipped or failed (domain::bulk::LineReason)
bulk-reason-out_of_stock = Out of stock
bulk-reason-claim_limit_reached = User at the per-customer limit
bulk-reason-template_inactive = Template not open for issuing
bulk-reason-invalid_user_id = Not a valid user ID
bulk-reason-not_found = No such coupon
bulk-reason-other_template = Coupon of another template
bulk-reason-locked = Locked to an order, not voided
bulk-reason-used = Already used, not voided
bulk-reason-expired = Already expired, not voided
bulk-reason-invalidated = Voided before
bulk-reason-changed = The coupon changed while the job looked at it
bulk-reason-other = Another reason

## The template page's part
bulk-section = Bulk issue and bulk void
bulk-issue-title = Bulk issue
bulk-void-title = Bulk void
bulk-no-jobs = No bulk jobs for this template yet.
bulk-kind = Job
bulk-status = Standing
bulk-progress = Progress
bulk-progress-short = { $done } / { $total }
bulk-started-at = Started

## Bulk issue form
bulk-issue-page-title = Bulk issue: { $name }
bulk-issue-explained = Gives each user on the list one coupon of this template, from its stock and within its per-customer limit; users it cannot serve are skipped with the reason. Sending the same list again issues nothing twice.
bulk-user-ids = User IDs
bulk-user-ids-note = Or paste them here: one user ID a line, optionally under a header line user_id.
bulk-notify = Tell each user
bulk-notify-yes = Yes
bulk-notify-no = No
bulk-issue-start = Start issuing
bulk-back-to-template = Back to the template
bulk-started-flash = The job has started: { $total } lines.
bulk-started-plain = The job has started.
bulk-error-user-ids = Please give one user ID a line (at least one).
bulk-user-file = CSV file of user IDs
bulk-user-file-note = One user ID a line, optionally under a header line user_id; up to 1,000,000 lines (64 MiB).
bulk-error-file = This file cannot be used: it must be text with one user ID a line (at least one, at most 1,000,000). Please choose it again after fixing it.
bulk-error-file-and-list = Please give either a file or a pasted list, not both. Choose the file again, or clear the list.
bulk-error-upload = The upload arrived incomplete. Please choose the file and send the form again.

## Bulk void form
bulk-void-page-title = Bulk void: { $name }
bulk-void-preview = Voids { $available } available coupons; { $locked } locked and { $used } used coupons are left alone and counted as skipped.
bulk-void-next = Next: confirm
bulk-void-confirm-question = Void the { $available } available coupons of this template? This cannot be undone.
bulk-void-confirm = Void them
bulk-void-file = Only the coupons of a file (optional)
bulk-void-file-note = A CSV file of coupon IDs, one a line, optionally under a header line coupon_id; up to 100,000 here (larger lists go through the API). Without a file, all available coupons of this template are voided.
bulk-void-list-preview = The file lists { $count } coupons: the available ones of this template among them are voided; locked, used and other coupons are left alone and counted as skipped.
bulk-void-list-confirm-question = Void the available coupons among the { $count } listed? This cannot be undone.
bulk-error-void-file = This file cannot be used: it must be text with one coupon ID a line (at least one, at most 100,000). Please choose it again after fixing it.
## Job page
bulk-job-title = { $kind }: { $name }
bulk-job = Bulk job
bulk-refreshing = The job is running; this page reloads every 3 seconds.
bulk-refresh-now = Reload now
bulk-total = Lines
bulk-done = Handled
bulk-issued = Coupons issued
bulk-voided = Coupons voided
bulk-skipped = Skipped lines
bulk-failed = Failed lines
bulk-reasons = Why lines were skipped or failed
bulk-started-by = Started by
bulk-finished-at = Finished
bulk-results-file = Download the results, line by line (CSV)
bulk-id-job = Job ID
bulk-uploads-busy = Other uploads are being read right now; try again in { $seconds } s.
