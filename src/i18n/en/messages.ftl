# Messages for customers decided by the domain: the final-payment quote
# (domain::campaign); the reminders' are in reminder_texts.ftl.
final-payment-due = Final payment: { $due } yuan.
final-payment-applied = Final payment: { $due } yuan, { $discount } yuan off with your coupon.
final-payment-coupon-expired = Your coupon has expired; the final payment is { $due } yuan with no discount.
final-payment-swapped = Your coupon expired, so another of your coupons was used: { $discount } yuan off, final payment { $due } yuan.
final-payment-compensated = Your coupon expired; we take { $compensation } yuan off as compensation. Final payment: { $due } yuan.
final-payment-stacked = Final payment: { $due } yuan, { $discount } yuan off with your { $coupons } coupons.
final-payment-stacked-expired = Final payment: { $due } yuan. { $expired } of your { $coupons } coupons expired: { $discount } yuan off, and { $compensation } yuan off as compensation.
final-payment-stacked-expired-coupon = Final payment: { $due } yuan. { $expired } of your { $coupons } coupons expired: { $discount } yuan off, and a new coupon worth { $compensation } yuan as compensation (it is in your account).
