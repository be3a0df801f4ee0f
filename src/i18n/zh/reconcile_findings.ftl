# Reconciliation findings (domain::reconcile), stored as key + arguments
# and rendered when read.
reconcile-locked-to-missing-order = 优惠券 { $coupon } 锁定在不存在的订单 { $no } 上
reconcile-locked-to-ended-order = 订单 { $no } { $status }，优惠券 { $coupon } 仍被锁定
reconcile-locked-but-order-names-another = 优惠券 { $coupon } 锁定在订单 { $no } 上，但订单记录的是 { $named }
reconcile-locked-to-paid-order = 订单 { $no } { $status }，优惠券 { $coupon } 仍显示锁定中
reconcile-stale-checkout-lock = 订单 { $no } 结算锁已过期仍未付款，优惠券 { $coupon } 仍被锁定
reconcile-used-but-order-names-another = 优惠券 { $coupon } 已被订单 { $no } 使用，但订单记录的是 { $named }
reconcile-used-on-unpaid-order = 优惠券 { $coupon } 显示已使用，但订单 { $no } 从未付款（{ $status }）
reconcile-live-order-coupon-missing = 订单 { $no } { $status }，应锁定优惠券 { $coupon }，但这张券不存在
reconcile-live-order-coupon-not-locked = 订单 { $no } { $status }，应锁定优惠券 { $coupon }，但这张券现在是「{ $coupon_status }」
reconcile-live-order-coupon-bound-elsewhere = 订单 { $no } { $status }，应锁定优惠券 { $coupon }，但这张券现在是「{ $coupon_status }」（属于订单 { $other }）
reconcile-template-stock-mismatch = 券模板 { $template } 记录领取 { $claimed } 张，实际发出 { $issued } 张
reconcile-no-coupon = 无券
# A finding stored before findings were stored as keys (migration 0014):
# its text in the language it was written in.
legacy-finding = { $zh }
reconcile-template-counts-mismatch = 券模板 { $template } 的报表计数中{ $figure }为 { $counted }，按券重新清点为 { $recounted }
reconcile-figure-claimed = 已领取张数
reconcile-figure-available = 可用张数
reconcile-figure-locked = 已锁定张数
reconcile-figure-used = 已使用张数
reconcile-figure-expired = 已过期张数
reconcile-figure-invalidated = 已作废张数
reconcile-figure-discount = 优惠金额（分）
reconcile-split-mismatch = 订单 { $no } 各行上券 { $coupon } 的分摊合计 { $split } 分，但订单为这张券记的优惠是 { $expected } 分
reconcile-refund-over-payable = 订单 { $no } 的行 { $line } 已退 { $refunded } 分，超过了这一行的实付 { $payable } 分
reconcile-coupon-not-returned-after-refunds = 券 { $coupon } 优惠的 { $refunded } 件商品已全部退款，但仍显示被订单 { $no } 使用
reconcile-coupons-out-of-step = 订单 { $no } 记录券 { $coupon } 为「{ $record }」（首张券为「{ $first }」），但这张券是「{ $status }」
reconcile-budget-used-vs-reserved = 券模板 { $template } 的预算已用 { $a } 分，但预占记录合计 { $b } 分
reconcile-budget-reserved-vs-live = 券模板 { $template } 的预算预占合计 { $a } 分，但它在订单上的券合计优惠 { $b } 分
