temporarily-unavailable = Temporarily unavailable
we-cannot-read-your-data-right = We cannot read your data right now; please reload the page in a little while.
you-have-no-coupons = You have no coupons.
you-have-no-orders = You have no orders.
order-3 = order
deposit-to-pay = Deposit due
final-payment-to-pay = Final payment due
to-pay = Amount to pay
coupon-discount-2 = Coupon discount
order-total = Order total
nothing-to-do = Nothing to do.
please-note-the-above-contact-support = Please note the above; contact support if anything is unclear.
this-is-not-something-you-did = This is not something you did. Press “Contact support” below: the check's results go with your request, and support can fix it directly.
what-to-do = What to do:{" "}
check-done-your-coupons-and-orders = Check done: your coupons and orders are all in order. Nothing to do.
check-done-there-is-something-to = Check done: there is something to note; see below.
check-done-we-found-a-problem = Check done: we found a problem that support needs to fix; see below.
coupons-3 = Coupons
no-problem-found-nothing-to-do = No problem found; nothing to do.
you-have-no-messages = You have no messages.
unread = unread
mark-all-as-read = Mark all as read
checks-that-your-orders-and-coupons = Checks that your orders and coupons agree, e.g. that no closed order still holds a coupon. It only reads; nothing is changed.
check-my-orders = Check my orders
coupon-self-check = Coupon self-check
one-click-check = One-click check
this-coupon-is-locked-for-order = This coupon is locked for order { $no }: { $d } yuan comes off automatically at the final payment.
this-coupon-is-reserved-for-order = This coupon is reserved for order { $no }: { $d } yuan comes off when you pay.
this-coupon-is-still-held-by = This coupon is still held by order { $no }.
this-coupon-is-held-by-order = This coupon is held by order { $order_no }, which does not use it (run the check).
order-8 = Order { $order_no }
this-link-is-for-you-only = This link is for you only and works until { $expires }. Please do not share it.
my-coupons = My coupons ({ $n_coupons })
my-orders = My orders ({ $n_orders })
this-coupon-is-held-run-the-check = This coupon is held and cannot be used for now (run the check).
messages-unread = Messages ({ $n } unread)
messages = Messages
self-check-link-invalid = This link is invalid or has expired
self-check-link-invalid-why = This self-check link cannot be opened: it may have expired, been changed or been cut short. Go back to the shop app and open the coupon self-check again for a new link.
self-check-another-coupon = (another coupon)

## Before the check: what an order's card says (service::self_check::order_standing)
sc-order-lapsed = The time to pay ran out at { $at }: this order can no longer be paid and will be closed.
sc-coupon-back-when-closed = Coupon { $code } will not come off this order; it returns to your account when the order is closed (unless it has expired by then).
sc-presale-window-over = The final-payment period ended at { $at }: this presale order can no longer be paid.
sc-deposit-rules = The deposit you paid ({ $deposit }) is handled under the shop's deposit rules; contact support if anything is unclear.
sc-normal-closed = This order was closed before it was paid and can no longer be paid.
sc-presale-closed-before-deposit = This presale order was closed before the deposit was paid: no deposit was taken, and it can no longer be paid.
sc-presale-closed-before-final = This presale order was closed before the final payment and can no longer be paid.
sc-presale-deposit-refunded = This presale order was refunded before the final payment: your deposit ({ $deposit }) was refunded.
sc-order-refunded = This order was refunded; there is nothing to pay.
sc-partial-refund = Part of this order was refunded: { $n ->
        [one] 1 item
       *[other] { $n } items
    }, { $amount } back to you.
sc-partial-refund-clawback = { $amount } of the discount was taken back: the items you kept no longer reach the coupon's minimum spend, so by the coupon's rule the discount on them was taken back.
sc-coupon-kept-for-rest = Coupon { $code } still counts for the items you kept; it comes back to you once they are all refunded.
sc-coupon-released-unnamed = This order's coupon was released from it.
sc-coupon-still-held = Coupon { $code } is still held by this order; run the check to see why.
sc-coupon-back-available = Coupon { $code } { $back ->
        [yes] is back in your account
       *[no] was not used by this order
    }; you can use it until { $ends }.
sc-coupon-back-expired = Coupon { $code } { $back ->
        [yes] came back to your account
       *[no] was not used by this order
    }, but it expired at { $ends } and can no longer be used.
sc-coupon-back-withdrawn = Coupon { $code } { $back ->
        [yes] came back to your account
       *[no] was not used by this order
    }, but it has since been withdrawn and can no longer be used.
sc-coupon-back-gone-to = Coupon { $code } { $back ->
        [yes] came back to your account
       *[no] was not used by this order
    } and has since gone to order { $no }.
sc-final-payment-window = Final payment: { $starts } to { $ends }
sc-closed-on = Closed on
sc-refunded-on = Refunded on

## Before the check: what a coupon's card says
sc-coupon-offer = Offer
sc-coupon-threshold = Minimum spend
sc-threshold-from = orders from { $t }
sc-no-threshold = no minimum
sc-coupon-categories = Categories
sc-all-categories = all categories
sc-category-separator = {", "}
sc-coupon-ends = Valid until
sc-coupon-ready = You can use it now.
sc-coupon-not-started = Usable from { $starts }.
sc-coupon-used-on-order = Used on order { $order_no } ({ $at }).
sc-coupon-used = Used ({ $at }).
sc-coupon-expired = Expired; it can no longer be used.
sc-coupon-withdrawn = Withdrawn; it can no longer be used.
sc-coupon-held-not-payable = This coupon is held by order { $no }, which can no longer be paid, so it will not come off; it returns to your account when that order is closed (unless it has expired by then).
sc-paid-deposit = Deposit paid
sc-paid-final = Final payment paid
sc-paid-amount = Amount paid
