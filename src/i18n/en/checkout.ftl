# The checkout picker (选券, POST /users/{user_id}/coupon-options and the
# console's "try a cart"): why a coupon does not fit a cart, and the
# cautions before a presale deposit, in a customer's words.

picker-threshold-not-met = Add ¥{ $shortfall } more to use this coupon (minimum spend ¥{ $threshold }).
picker-not-applicable = Only for { $categories }.
picker-not-started = Usable from { $starts }.
picker-budget-exhausted = The budget of this kind of coupon has run out.
picker-warning-expires_before_final_payment = This coupon ends before the final payment opens ({ $window }). Under this presale's rules it will then take nothing off the final payment; consider another coupon.
picker-warning-may_be_replaced_at_final_payment = This coupon ends before the final payment opens ({ $window }). At the final payment it will be swapped for another of your coupons of the same kind, or you will be compensated.

## The console's "try a cart" on a user's page
try-cart-heading = Try a cart
try-cart-intro = Before an order exists: which of this user's coupons fit this cart, how much each takes off, and why the others do not.
try-cart-kind = Order kind
try-cart-total = Order total (yuan)
try-cart-category = Category
try-cart-campaign = Presale campaign
try-cart-no-campaign = None
try-cart-deposit = Deposit (yuan, presale only)
try-cart-submit = Try it
try-cart-best = Best: { $code }, { $discount } off.
try-cart-no-best = No coupon to recommend.
try-cart-usable = Usable ({ $n })
try-cart-unusable = Not usable ({ $n })
try-cart-none = This user has no coupons to use.
try-cart-terms = Offer
try-cart-saves = Takes off
try-cart-note = Caution
try-cart-why = Why
try-cart-error-total = Enter an order total above 0, like 399 or 399.50.
try-cart-error-deposit = Enter a deposit above 0 and at most the order total.
try-cart-error-campaign = Choose a presale campaign that is still running for a presale order.
try-cart-error-category = A category is at most 64 characters.
try-cart-lines = Order lines (optional)
try-cart-lines-hint = One item a row: shop, category, quantity, unit price (yuan); "-" for no shop, e.g. A beauty 2 100. With lines, leave the order amount and the category empty; the answer adds the best combination.
try-cart-error-lines-and-total = With order lines, leave the order amount and the category empty.
try-cart-error-lines-too-many = At most 500 lines.
try-cart-error-line = Row { $row } should read: shop, category, quantity, unit price, e.g. A beauty 2 100; quantity 1–9999.
try-cart-error-lines = Check the lines: each row is shop, category, quantity, unit price.
try-cart-combination = Best combination: { $codes }, { $discount } off in all.
try-cart-no-combination = No combination applies.
