# What an event row says, for people (domain::event): its action and who
# did it, in timelines and the audit log.

## Actions (domain::event::EventAction)
event-action-claim = Claimed
event-action-compensation = Compensation coupon issued
event-action-checkout_lock = Locked at checkout
event-action-lock = Locked at deposit
event-action-use = Used on an order
event-action-cancel_release = Released: order cancelled
event-action-refund_release = Released: order refunded
event-action-release_expired = Released (past its end)
event-action-swap_lock = Swapped in at final payment
event-action-expire = Reached its end
event-action-zombie_release = Stuck lock released
event-action-force_release = Force-released
event-action-staff_release = Released by support
event-action-invalidate = Voided
event-action-relock = Locked again
event-action-mark_used = Marked as used
event-action-unarchive = Restored from the archive
event-action-create = Order placed
event-action-pay = Payment made
event-action-deposit_payment = Deposit payment made
event-action-final_payment = Final payment made
event-action-cancel = Order cancelled
event-action-refund = Refund made
event-action-partial_refund = Partial refund made
event-action-checkout_lock_lapsed = Payment time ran out; order closed automatically
event-action-presale_timeout = Final-payment time ran out; order closed automatically
event-action-relock_coupon = Order's coupon locked again
event-action-relink_coupon = Order linked to its coupon again
event-action-mark_coupon_used = Order's coupon marked as used
event-action-return_coupon = Order's coupon returned after its refunds
event-action-release_coupon = Order's coupon released
event-action-force_release_coupon = Order's coupon force-released

## Actors (domain::event::Actor)
actor-staff = Console: { $name }
actor-api = Shop API ({ $token }…)
actor-demo = Demo data
actor-cli = Server command line
actor-customer = The customer (self-check page)
event-action-support_requested = Customer asked for support
event-action-support_request_handled = Support request handled
actor-job-expiry-wheel = Expiry job
actor-job-expiry-sweep = Expiry backstop sweep
actor-job-checkout-lapse = Checkout timeout job
actor-job-presale-timeout = Final-payment timeout job
actor-job-zombie-reaper = Stuck-lock cleaner
actor-job-reconcile = Reconciliation job
actor-job-archive = Archive job
actor-job-webhook-dispatcher = Message delivery job

## Staff-log actions (service::staff::actions)
staff-action-staff_create = Staff account created
staff-action-staff_replace = Staff account recreated
staff-action-role_change = Role changed
staff-action-password_reset = Password reset
staff-action-disable = Account disabled
staff-action-enable = Account enabled
staff-action-sign_in = Signed in
staff-action-sign_in_failed = Sign-in failed
staff-action-sign_out = Signed out
staff-action-password_change = Changed own password
staff-action-reauth_failed = Password confirmation failed
staff-action-webhook_add = Webhook subscriber added
staff-action-webhook_disable = Webhook subscriber disabled
staff-action-webhook_enable = Webhook subscriber enabled
reason-expired-before-final-strict = Ended before the final payment (strict rules: no discount)
reason-expired-before-final-swap = Ended before the final payment (swap-or-compensate rules)
reason-final-payment-deduction = The presale coupon ended before the final payment and no equivalent coupon was available: compensated in the final payment
reason-refund-reversal = The order was refunded in full, so the compensation of its final payment is reversed
reason-final-payment-coupon = The presale coupon ended before the final payment and no equivalent coupon was available: compensated with a coupon of the same value
reason-replaces-expired-coupon = Replaces a coupon that ended before the final payment
