# Presale campaigns (预售场次) for operators: the console's campaign pages
# (web::campaigns), the refusal of a change after the final-payment window
# opened, and the final payment's message under the coupon compensation mode.

refusal-campaign_window_open = The final-payment period of this presale has begun; its policy and compensation can no longer change.
final-payment-compensated-coupon = Your coupon expired; we have given you a new { $compensation } yuan coupon as compensation (it is in your account). Final payment: { $due } yuan.

nav-campaigns = Campaigns
campaigns-title = Presale campaigns
campaigns-explained = Each presale's final-payment window, policy and orders, the newest first.
campaign-title = Presale campaign
campaign-none-yet = No presale campaigns yet.
campaign-bad-cursor = That page link is not valid; open the list from its first page.
campaign-none-match = No presale campaign matches.
campaign-unknown-filter = A filter could not be read; please choose again.
campaign-name-contains = Name contains
campaign-phase = Phase
campaign-phase-before-final-payment = Final payment not yet open
campaign-phase-final-payment-open = Final payment open
campaign-phase-ended = Final payment closed
campaign-needs-operator = Creating or changing a presale campaign needs the operator or admin role.
campaign-change-needs-operator = Changing the policy or the compensation needs the operator or admin role.
campaign-new = New presale campaign
campaign-new-explained = Times are in the business time zone; without a choice the policy is "lock".
campaign-create-button = Create the campaign
campaign-created = Presale campaign "{ $name }" created.
campaign-created-plain = Presale campaign created.
campaign-field-starts = Final payment opens ({ $zone })
campaign-field-ends = Final payment closes ({ $zone })
campaign-error-name = Enter a name of at most 200 characters.
campaign-error-time = Enter a full date and time, such as 2026-11-11 20:00.
campaign-error-ends = The final payment must close after it opens.
campaign-error-policy = Choose a policy.
campaign-error-mode = Choose how compensation is given.

campaign-standing = Window
campaign-opens-in = opens in { $span }
campaign-closes-in = open, closes in { $span }
campaign-closed-ago = closed { $span } ago
campaign-span-days = { $days ->
        [one] 1 day
       *[other] { $days } days
    } { $hours ->
        [one] 1 hour
       *[other] { $hours } hours
    }
campaign-span-hours = { $hours ->
        [one] 1 hour
       *[other] { $hours } hours
    } { $minutes ->
        [one] 1 minute
       *[other] { $minutes } minutes
    }
campaign-span-minutes = { $minutes ->
        [one] 1 minute
       *[other] { $minutes } minutes
    }
campaign-orders = Orders
campaign-counts = deposit paid { $deposit_paid } · final payment paid { $final_paid } · closed or refunded { $closed }
campaign-coupons-past-end = When the final payment opens, { $n ->
        [one] 1 locked coupon will be
       *[other] { $n } locked coupons will be
    } past their own end.
campaign-past-end-lock = This campaign locks coupons: these still take their amount off at the final payment.
campaign-past-end-strict = This campaign is strict: these will take nothing off the final payment.
campaign-past-end-swap = This campaign swaps or compensates: these will be swapped for another coupon of the customer's, or compensated.

campaign-policy-heading = The policy in words
campaign-policy-staff-lock = Lock: a coupon locked at the deposit still takes the amount recorded at the deposit off the final payment, even if it ends before then. Nothing to compensate.
campaign-policy-staff-strict = Strict: a coupon that has ended by the final payment takes nothing off; the customer pays the full final payment. No compensation; expect questions to support.
campaign-policy-staff-swap = Swap or compensate: a coupon that has ended by the final payment is replaced by one of the customer's available coupons of the same kind worth at least as much; without one, the customer is compensated the amount recorded at the deposit (how: see the compensation below).
campaign-customer-words = What the customer reads
campaign-customer-words-example = For example, a 50.00 yuan coupon ending a day before the final payment opens, on a 399.00 yuan order with a 100.00 yuan deposit. The customer reads, in the self-check, at checkout and at the final payment:
campaign-mode = Compensation
campaign-mode-deduction = taken off the final payment
campaign-mode-coupon = a new coupon of the same value
campaign-mode-staff-deduction = Taken off the final payment: the compensation is deducted from this final payment and written to the compensation ledger.
campaign-mode-staff-coupon = A new coupon of the same value: the final payment is paid in full, and in the same operation the customer is given a compensation coupon of that value, written to the compensation ledger.
campaign-mode-applies = The compensation applies only when no coupon can replace an ended one.
campaign-mode-applies-only-to-swap = The compensation applies only under "swap or compensate"; the other policies compensate nothing.

campaign-change-heading = Changes
campaign-window-opened-no-change = The final-payment window has opened: the policy and the compensation can no longer change.
campaign-new-policy = New policy
campaign-preview-button = Preview the effect
campaign-change-mode = Change the compensation
campaign-preview-title = Change the policy of "{ $name }"
campaign-preview-judged-at = Judged as of
campaign-preview-orders-read = Orders with the deposit paid
campaign-preview-changed = Orders whose final payment would change
campaign-extra-cost = Extra compensation
campaign-preview-at-least = at least { $n }
campaign-preview-explained = Each deposit-paid order is judged at the moment the final payment opens, by the same rule as the final payment itself; no replacement coupon is assumed, so the compensation is the most this change can add.
campaign-outcome-now = Outcome now
campaign-outcome-then = Outcome after the change
campaign-outcome-applied = coupon takes its amount off
campaign-outcome-no-discount = coupon ended, nothing off
campaign-outcome-swapped = swapped for another coupon
campaign-outcome-compensated = compensated
campaign-outcome-none = no coupon
campaign-reason = Why (required; written to the history)
campaign-confirm-policy = Change the policy
campaign-policy-changed = The policy is now: { $policy }.
campaign-mode-title = Change the compensation of "{ $name }"
campaign-confirm-mode = Change the compensation
campaign-mode-changed = Compensation is now: { $mode }.

campaign-history = History of changes
campaign-no-history = No changes yet.
campaign-what = What
campaign-change-created = Created
campaign-change-created-with = policy: { $policy }; compensation: { $mode }

## The staff log's words for the campaigns' actions (service::campaigns::actions)
staff-action-campaign_create = Presale campaign created
staff-action-campaign_policy_change = Campaign policy changed
staff-action-campaign_compensation_mode_change = Campaign compensation changed
