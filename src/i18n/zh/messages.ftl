# Messages for customers decided by the domain: the final-payment quote
# (domain::campaign); the reminders' are in reminder_texts.ftl.
final-payment-due = 本次尾款 { $due } 元。
final-payment-applied = 本次尾款 { $due } 元，已为你抵扣 { $discount } 元。
final-payment-coupon-expired = 你的优惠券已过期，本次尾款 { $due } 元，不再抵扣。
final-payment-swapped = 原优惠券已过期，已自动换用你的另一张优惠券，抵扣 { $discount } 元，本次尾款 { $due } 元。
final-payment-compensated = 原优惠券已过期，平台补偿立减 { $compensation } 元，本次尾款 { $due } 元。
final-payment-stacked = 本次尾款 { $due } 元，{ $coupons } 张优惠券共抵扣 { $discount } 元。
final-payment-stacked-expired = 本次尾款 { $due } 元。你的 { $coupons } 张优惠券中有 { $expired } 张已过期：抵扣 { $discount } 元，补偿立减 { $compensation } 元。
final-payment-stacked-expired-coupon = 本次尾款 { $due } 元。你的 { $coupons } 张优惠券中有 { $expired } 张已过期：抵扣 { $discount } 元，另补偿你价值 { $compensation } 元的新优惠券（已发到你的账户）。
