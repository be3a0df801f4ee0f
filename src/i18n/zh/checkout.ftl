# The checkout picker (选券, POST /users/{user_id}/coupon-options and the
# console's "try a cart"): why a coupon does not fit a cart, and the
# cautions before a presale deposit, in a customer's words.

picker-threshold-not-met = 还差 { $shortfall } 元可用（满 { $threshold } 元可用）。
picker-not-applicable = 仅限{ $categories }使用。
picker-not-started = { $starts } 起可用。
picker-warning-expires_before_final_payment = 这张券会在付尾款开始（{ $window }）前过期。按这场预售的规则，到时它不再抵扣尾款，建议换一张券。
picker-warning-may_be_replaced_at_final_payment = 这张券会在付尾款开始（{ $window }）前过期。付尾款时会换成你账户里同类的另一张券，没有的话会给你补偿。
