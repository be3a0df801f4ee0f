sms = SMS
push = Push
in-app-only = In-app only
none-no-quiet-hours = none (no quiet hours)
n-0-no-aggregation = 0 (no aggregation)
plan-and-tiers = Plan and tiers
these-settings-come-from-the-deployments = These settings come from the deployment's environment (read-only); change them there and restart.
setting = Setting
value = Value
variable = Variable
offsets-before-the-end = Offsets (before the end)
aggregation-window = Aggregation window
quiet-hours-business-time-zone = Quiet hours (business time zone)
business-time-zone = Business time zone
sms-threshold-total-value-at-least = SMS threshold (total value at least)
sms-per-user-per-24-hours = SMS per user per 24 hours
push-per-user-per-24-hours = Push per user per 24 hours
tiers-a-reminder-whose-coupons-together = Tiers: a reminder of a push offset whose coupons together reach the sms threshold goes by sms if the user is active; an offset set to in-app, sms or pop-up goes by that. Over the sms cap a reminder becomes a push, over the push cap only the in-app copy; a pop-up shows only at the customer's next visit and has no cap. Every reminder also has an in-app copy.
no-longer-planned = no longer planned
last-24-hours = Last 24 hours
since = Since
total-3 = total
channel = Channel
reminders-2 = Reminders
offset = Offset
total-4 = Total
no-reminders-sent-yet = No reminders sent yet.
coupons-2 = Coupons
total-value = Total value
send-time = Send time
the-20-most-recent-reminders = The 20 most recent reminders
the-reminder-plan-needs-the-operator = The reminder plan needs the operator role.
seconds = { $secs } seconds
users-without-a-claim-an-order = Users without a claim, an order or a self-check visit in the last { $INACTIVE_AFTER_DAYS } days get no sms (push instead). A fixed rule, not configurable.
offset-days-before = { $n } { $n ->
    [one] day
   *[other] days
} before
offset-hours-before = { $n } { $n ->
    [one] hour
   *[other] hours
} before
offset-minutes-before = { $n } { $n ->
    [one] minute
   *[other] minutes
} before
offset-seconds-before = { $n } { $n ->
    [one] second
   *[other] seconds
} before
popup = Pop-up
push-or-sms-by-tier = Push (SMS at or above the threshold)
channel-per-offset = Channel per offset
offset-goes-by = { $offset }: { $channel }
recommended-channels = Recommended, the write-up's rhythm (in-app, then push or SMS, then a pop-up at the customer's next visit): { $value }. Unset, every offset goes by push, or by SMS at or above the threshold, as the API contract says.
# The self-check page's pending reminder pop-ups.
coupons-about-to-expire = Coupons about to expire
first-coupon-ends = First to end:
got-it-mark-all-as-read = Got it (mark all messages as read)
