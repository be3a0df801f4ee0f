# Domain terms, keyed by the domain's enums: one word per thing, used by
# every page, the health check, the API and the reminders alike.

## Coupon statuses (domain::coupon::CouponStatus)
coupon-status-available = available
coupon-status-locked = locked
coupon-status-used = used
coupon-status-expired = expired
coupon-status-invalidated = invalidated

## Order statuses (domain::order::OrderStatus)
order-status-pending_payment = pending payment
order-status-paid = paid
order-status-pending_deposit = pending deposit
order-status-deposit_paid = deposit paid
order-status-final_paid = final payment paid
order-status-closed = closed
order-status-refunded = refunded

## An order's hold on its coupon (lock_status)
lock-status-none = none
lock-status-locked = locked
lock-status-used = used
lock-status-released = released

## How a coupon came to its holder (domain::coupon::CouponSource)
coupon-source-claim = claimed by the customer
coupon-source-compensation = issued as compensation

## Discount kinds (domain::discount::DiscountKind)
discount-kind-fixed = amount off
discount-kind-percent = percent off

## Health-check results
result-ok = OK
result-warning = Warning
result-problem = Problem

## Staff roles
role-support = support
role-operator = operator
role-admin = admin

## Anything not (yet) in the catalog
term-unknown = unknown

## Refusals (service::Refusal), in a customer's words
refusal-out_of_stock = These coupons have all been claimed.
refusal-claim_limit_reached = You have claimed this coupon as many times as allowed.
refusal-template_inactive = This coupon cannot be claimed or used right now.
refusal-coupon_not_owned = This coupon belongs to another account.
refusal-coupon_not_available = This coupon cannot be used right now (it may be used, held by an order or withdrawn).
refusal-coupon_expired = This coupon has expired.
refusal-coupon_not_started = This coupon cannot be used yet.
refusal-threshold_not_met = The order does not reach this coupon's minimum spend yet.
refusal-coupon_not_applicable = This coupon does not apply to the items in the order.
refusal-coupons_not_combinable = These coupons cannot be used on one order together.
refusal-budget_exhausted = The budget of this kind of coupon has run out; it cannot be used now.
refusal-detail-coupon = Coupon { $coupon }.
refusal-detail-coupon-short = Coupon { $coupon } is { $short } short.
refusal-detail-not-stackable = Coupon { $coupon } cannot be combined with other coupons.
refusal-detail-same-shop = Coupons { $first } and { $second } are both for shop { $shop }: one coupon per shop.
refusal-detail-two-platform = Coupons { $first } and { $second } are both platform coupons: one per order.
refusal-order_exists = An order with this number already exists.
refusal-outside_payment_window = The final payment is not open right now.
refusal-coupon_lock_mismatch = This coupon is not locked to this order.
refusal-detail-not-locked = The coupon is not held for this order any more (it may have been released, expired or used on another order); please contact support, who can put the order right.
refusal-detail-locked-to-another-order = The coupon is held by another order; please contact support, who can put the order right.
refusal-order_active = The order is still active, so its coupon cannot simply be released; an operator can force the release.
refusal-invalid_order_status = The order's status does not allow this.
refusal-order_kind_mismatch = This action does not apply to this kind of order (normal and presale orders differ).
refusal-checkout_lock_expired = The time to pay this order has run out; it will be closed. Please order again.
refusal-compensation_limit_exceeded = This is more compensation than support may give (per coupon or per day); ask an operator.
refusal-order_not_owned = The order belongs to another user.
refusal-coupon_not_on_order = That coupon is not one of this order's coupons.
refusal-repair_not_applicable = The facts no longer call for this repair.
refusal-edit_not_allowed = This change would alter coupons already issued or lower the stock: a template can only be renamed, have its stock raised (never below what was claimed), have its budget changed (never below what is used) or end claiming early.
