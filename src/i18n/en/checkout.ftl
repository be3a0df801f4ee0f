# The checkout picker (选券, POST /users/{user_id}/coupon-options and the
# console's "try a cart"): why a coupon does not fit a cart, and the
# cautions before a presale deposit, in a customer's words.

picker-threshold-not-met = Add ¥{ $shortfall } more to use this coupon (minimum spend ¥{ $threshold }).
picker-not-applicable = Only for { $categories }.
picker-not-started = Usable from { $starts }.
picker-warning-expires_before_final_payment = This coupon ends before the final payment opens ({ $window }). Under this presale's rules it will then take nothing off the final payment; consider another coupon.
picker-warning-may_be_replaced_at_final_payment = This coupon ends before the final payment opens ({ $window }). At the final payment it will be swapped for another of your coupons of the same kind, or you will be compensated.
