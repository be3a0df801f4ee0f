# Reconciliation findings (domain::reconcile), stored as key + arguments
# and rendered when read.
reconcile-locked-to-missing-order = coupon { $coupon } is locked to order { $no }, which does not exist
reconcile-locked-to-ended-order = coupon { $coupon } is still locked to order { $no }, which is { $status }
reconcile-locked-but-order-names-another = coupon { $coupon } is locked to order { $no }, but the order names { $named }
reconcile-locked-to-paid-order = coupon { $coupon } is still locked to order { $no }, which is { $status }
reconcile-stale-checkout-lock = order { $no } is past its checkout lock and unpaid; coupon { $coupon } is still locked
reconcile-used-but-order-names-another = coupon { $coupon } was used by order { $no }, but the order names { $named }
reconcile-used-on-unpaid-order = coupon { $coupon } reads used, but order { $no } was never paid ({ $status })
reconcile-live-order-coupon-missing = order { $no } is { $status } and should hold coupon { $coupon } locked, but the coupon is missing
reconcile-live-order-coupon-not-locked = order { $no } is { $status } and should hold coupon { $coupon } locked, but the coupon is { $coupon_status }
reconcile-live-order-coupon-bound-elsewhere = order { $no } is { $status } and should hold coupon { $coupon } locked, but the coupon is { $coupon_status } for order { $other }
reconcile-template-stock-mismatch = template { $template } counts { $claimed } claimed but issued { $issued } coupons
reconcile-no-coupon = no coupon
# A finding stored before findings were stored as keys (migration 0014):
# its text in the language it was written in.
legacy-finding = { $en }
reconcile-template-counts-mismatch = the report counters of template { $template } say { $counted } for { $figure }, a recount of its coupons gives { $recounted }
reconcile-figure-claimed = coupons claimed
reconcile-figure-available = available coupons
reconcile-figure-locked = locked coupons
reconcile-figure-used = used coupons
reconcile-figure-expired = expired coupons
reconcile-figure-invalidated = invalidated coupons
reconcile-figure-discount = the discount given (cents)
reconcile-split-mismatch = the shares of coupon { $coupon } in the lines of order { $no } add up to { $split } cents, but the order took { $expected } cents for it
reconcile-refund-over-payable = line { $line } of order { $no } refunded { $refunded } cents, more than its payable { $payable } cents
reconcile-coupon-not-returned-after-refunds = coupon { $coupon } is still used by order { $no } although all { $refunded } items it discounted were refunded
reconcile-coupons-out-of-step = order { $no } records its coupon { $coupon } as { $record } (its first coupon: { $first }), but the coupon is { $status }
reconcile-budget-used-vs-reserved = template { $template } has used { $a } cents of its budget, but its reservations add up to { $b } cents
reconcile-budget-reserved-vs-live = the budget reservations of template { $template } add up to { $a } cents, but its coupons on orders take off { $b } cents
