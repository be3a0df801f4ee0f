health-order-is-still-awaiting-payment = Order { $no } is still awaiting payment, but its payment time ran out at { $at }; it can no longer be paid and should be closed.
health-the-deposit-for-order-is = The deposit for order { $no } is paid, but the final-payment period ended at { $at }; the order will be closed.
health-order-is = Order { $no }: { $status }.
health-order-uses-no-coupon = Order { $no } uses no coupon.
health-the-coupon-is-locked-for = The coupon is locked for order { $no }; { $discount } yuan will be taken off automatically at the final payment.
health-the-coupon-is-reserved-for = The coupon is reserved for order { $no }; { $discount } yuan will be taken off when it is paid.
health-the-coupon-was-used-on = The coupon was used on order { $no }.
health-coupon-kept-for-units = Coupon { $coupon } is still used for the { $kept } items of order { $no } not refunded ({ $refunded } refunded); that is normal: it goes back to the customer with the last of them.
health-coupon-not-returned-after-refunds = Every one of the { $refunded } items coupon { $coupon } discounted on order { $no } was refunded, but the coupon was not given back to the customer.
health-order-is-with-coupon-but = Order { $no } ({ $status }) took coupon { $coupon }, but the coupon still reads locked instead of used; it should be marked used for this order.
health-order-is-paid-with-coupon = Order { $no } is paid with coupon { $coupon }, but the coupon reads { $coupon_status }.
health-order-is-but-coupon-is = Order { $no } ({ $status }), but coupon { $coupon } is still locked to it; { $audience ->
        [customer] you
       *[staff] the customer
    } cannot use the coupon.
health-order-was-refunded-but-coupon = Order { $no } was refunded, but coupon { $coupon } still reads used.
health-coupon-is-and-not-held = Coupon { $coupon } is { $coupon_status } and not held by order { $no }.
health-coupon-is-for-order-but = Coupon { $coupon } is { $coupon_status } for order { $no }, but the order records coupon { $named }; the two must be linked again.
health-coupon-is-locked-to-order = Coupon { $coupon } is locked to order { $no }, but the order does not use it; { $audience ->
        [customer] you
       *[staff] the customer
    } cannot use the coupon.
health-coupon-was-used-on-order = Coupon { $coupon } was used on order { $no }, but the order records coupon { $named }.
health-no-coupon-is-bound-to = No coupon is bound to order { $no }.
health-order-uses-coupon-but-the = Order { $no } uses coupon { $coupon }, but the coupon is bound to order { $other }.
health-order-and-coupon-point-to = Order { $no } and coupon { $coupon } point to each other.
health-coupon-is-not-bound-to = Coupon { $coupon } is not bound to any order.
health-nothing-to-check-no-coupon = Nothing to check: no coupon is waiting for a final payment.
health-nothing-to-check-the-coupon = Nothing to check: the coupon is not locked to this order (see the coupon status check).
health-the-coupon-is-valid-until = The coupon is valid until { $ends }, past the end of the final-payment period ({ $window_ends }).
health-the-coupon-ends-at-but = The coupon ends at { $ends }, but this sale keeps it locked: { $discount } yuan will still be taken off at the final payment.
health-the-coupon-ends-at-before = The coupon ends at { $ends }, before the final payment can be made; under this sale's rules the { $discount } yuan discount will not apply.
health-the-coupon-ends-at-before-2 = The coupon ends at { $ends }, before the final-payment period ends ({ $window_ends }): pay the final payment before { $ends } to keep the { $discount } yuan discount.
health-the-coupon-ends-at-paid = The coupon ends at { $ends }; paid before then it takes { $discount } yuan off, later an equivalent coupon or { $discount } yuan compensation takes its place.
health-the-coupon-ends-at-before-3 = The coupon ends at { $ends }, before the final payment; it will be replaced by an equivalent coupon of { $audience ->
        [customer] yours
       *[staff] the customer's
    }, or { $discount } yuan will be taken off as compensation.
health-nothing-to-check-no-checkout = Nothing to check: no checkout lock is running.
health-order-holds-no-checkout-lock = Order { $no } holds no checkout lock.
health-the-coupon-was-reserved-for = The coupon was reserved for order { $no } until { $at }; that time has passed but the coupon is still held, so { $audience ->
        [customer] you
       *[staff] the customer
    } cannot use it.
health-the-checkout-lock-of-order = The checkout lock of order { $no } ran out at { $at } and holds no coupon.
health-the-coupon-is-reserved-for-2 = The coupon is reserved for order { $no } until { $at }.
health-nothing-to-check-the-coupon-2 = Nothing to check: the coupon comes from no template stock.
health-template-claimed-reconciliation-has-not = Template { $t }: { $claimed } claimed; reconciliation has not checked the counter yet.
health-template-claimed-the-counter-matched = Template { $t }: { $claimed } claimed; the counter matched the coupons issued at the last reconciliation ({ $at }).
health-template-at-the-last-reconciliation = Template { $t }: at the last reconciliation ({ $at }) the stock counter said { $claimed } claimed but { $issued } coupons existed.
health-coupon-is-still-locked-to = Coupon { $coupon } is still locked to order { $named }, which is { $status } and took it; it should be marked used for that order.
health-coupon-is-locked-to-order-2 = Coupon { $coupon } is locked to order { $named }, but { $why }; { $audience ->
        [customer] you
       *[staff] the customer
    } cannot use it.
health-order-names-a-missing-coupon = Order { $no } names coupon { $coupon }, which cannot be found.
health-order-should-hold-coupon = Order { $no } should hold coupon { $coupon } locked, but the coupon is { $coupon_status }.
health-order-should-hold-coupon-bound-elsewhere = Order { $no } should hold coupon { $coupon } locked, but the coupon is { $coupon_status } for order { $other }.
health-why-order-missing = its order does not exist
health-why-order-uses-another-coupon = its order uses another coupon
health-strict-expired-no-discount = The coupon ended at { $ends }, before the final payment opened ({ $opens }), so under this presale's strict rules the final payment took none of the { $discount } yuan discount. { $audience ->
        [customer] This is not your fault: contact support, who can compensate you for the { $discount } yuan.
       *[staff] Not compensated yet: compensate the customer { $discount } yuan (within the compensation caps).
    }
health-strict-expired-in-window-no-discount = The coupon ended at { $ends }, before the final payment was made, so under this presale's strict rules the final payment took none of the { $discount } yuan discount. { $audience ->
        [customer] Contact support, who can compensate you for the { $discount } yuan.
       *[staff] Not compensated yet: compensate the customer { $discount } yuan (within the compensation caps).
    }
health-strict-expired-compensated = The coupon ended at { $ends }, before the final payment opened ({ $opens }), so under this presale's strict rules the final payment took none of the { $discount } yuan discount; { $audience ->
        [customer] you were compensated { $given } yuan at { $at }.
       *[staff] { $given } yuan compensation was given at { $at }.
    }
health-strict-expired-in-window-compensated = The coupon ended at { $ends }, before the final payment was made, so under this presale's strict rules the final payment took none of the { $discount } yuan discount; { $audience ->
        [customer] you were compensated { $given } yuan at { $at }.
       *[staff] { $given } yuan compensation was given at { $at }.
    }
health-about-coupon = Coupon { $coupon }:{ " " }
