health-order-is-still-awaiting-payment = 订单 { $no } 仍显示待付款，但付款时限已于 { $at } 结束，已无法付款，应当关闭。
health-the-deposit-for-order-is = 订单 { $no } 已付定金，但尾款时段已于 { $at } 结束，订单将被关闭。
health-order-is = 订单 { $no } 状态：{ $status }。
health-order-uses-no-coupon = 订单 { $no } 未使用优惠券。
health-the-coupon-is-locked-for = 这张券已为订单 { $no } 锁定，付尾款时自动抵扣 { $discount } 元。
health-the-coupon-is-reserved-for = 这张券已为订单 { $no } 预留，付款时抵扣 { $discount } 元。
health-the-coupon-was-used-on = 这张券已在订单 { $no } 中使用。
health-coupon-kept-for-units = 券 { $coupon } 仍用于订单 { $no } 未退的 { $kept } 件商品（已退 { $refunded } 件），这是正常的；最后一件退款时券会退回给顾客。
health-coupon-not-returned-after-refunds = 订单 { $no } 中券 { $coupon } 优惠的 { $refunded } 件商品已全部退款，但券没有退回给顾客。
health-order-is-with-coupon-but = 订单 { $no } { $status }，已用券 { $coupon } 抵扣，但这张券仍显示「锁定中」而不是「已使用」，应标记为已在本订单使用。
health-order-is-paid-with-coupon = 订单 { $no } 已用券 { $coupon } 付款，但这张券显示为「{ $coupon_status }」。
health-order-is-but-coupon-is = 订单 { $no } { $status }，但优惠券 { $coupon } 仍被它锁定，{ $audience ->
        [customer] 您
       *[staff] 客户
    }无法使用这张券。
health-order-was-refunded-but-coupon = 订单 { $no } 已退款，但优惠券 { $coupon } 仍显示已使用，未退回。
health-coupon-is-and-not-held = 优惠券 { $coupon } 当前为「{ $coupon_status }」，未被订单 { $no } 占用。
health-coupon-is-for-order-but = 优惠券 { $coupon } 已为订单 { $no }「{ $coupon_status }」，但订单记录的是另一张券（{ $named }），需要重新关联。
health-coupon-is-locked-to-order = 优惠券 { $coupon } 被订单 { $no } 锁定，但订单并未使用它，{ $audience ->
        [customer] 您
       *[staff] 客户
    }无法使用这张券。
health-coupon-was-used-on-order = 优惠券 { $coupon } 已在订单 { $no } 中使用，但订单记录的是另一张券（{ $named }）。
health-no-coupon-is-bound-to = 没有优惠券绑定在订单 { $no } 上。
health-order-uses-coupon-but-the = 订单 { $no } 使用优惠券 { $coupon }，但这张券绑定在另一个订单 { $other } 上。
health-order-and-coupon-point-to = 订单 { $no } 与优惠券 { $coupon } 相互对应。
health-coupon-is-not-bound-to = 优惠券 { $coupon } 未绑定任何订单。
health-nothing-to-check-no-coupon = 无需检查：没有等待付尾款的优惠券。
health-nothing-to-check-the-coupon = 无需检查：这张券未锁定在本订单上（见券状态检查）。
health-the-coupon-is-valid-until = 这张券有效期至 { $ends }，覆盖整个尾款时段（至 { $window_ends }）。
health-the-coupon-ends-at-but = 这张券 { $ends } 到期，但本场预售锁定优惠，付尾款时仍自动抵扣 { $discount } 元。
health-the-coupon-ends-at-before = 这张券 { $ends } 到期，早于可付尾款的时间；按本场规则，付尾款时不能再抵扣 { $discount } 元。
health-the-coupon-ends-at-before-2 = 这张券 { $ends } 到期，早于尾款截止时间（{ $window_ends }）：请在 { $ends } 前付尾款，才能抵扣 { $discount } 元。
health-the-coupon-ends-at-paid = 这张券 { $ends } 到期；在此之前付尾款直接抵扣 { $discount } 元，之后会换用同等优惠券或直接补偿 { $discount } 元。
health-the-coupon-ends-at-before-3 = 这张券 { $ends } 到期，早于付尾款时间；届时会换用{ $audience ->
        [customer] 您
       *[staff] 客户
    }账户里同等的优惠券，或直接补偿抵扣 { $discount } 元。
health-nothing-to-check-no-checkout = 无需检查：没有进行中的下单锁券。
health-order-holds-no-checkout-lock = 订单 { $no } 没有锁券。
health-the-coupon-was-reserved-for = 这张券为订单 { $no } 预留到 { $at }，时间已过但券仍被占用，{ $audience ->
        [customer] 您
       *[staff] 客户
    }暂时无法使用。
health-the-checkout-lock-of-order = 订单 { $no } 的锁券已于 { $at } 结束，未占用优惠券。
health-the-coupon-is-reserved-for-2 = 这张券为订单 { $no } 预留到 { $at }。
health-nothing-to-check-the-coupon-2 = 无需检查：这张券不占用券模板库存。
health-template-claimed-reconciliation-has-not = 券模板 { $t }：已领 { $claimed } 张；对账尚未核对过库存计数。
health-template-claimed-the-counter-matched = 券模板 { $t }：已领 { $claimed } 张；上次对账（{ $at }）时库存计数与发券数一致。
health-template-at-the-last-reconciliation = 券模板 { $t }：上次对账（{ $at }）时库存计数为已领 { $claimed } 张，实际发出 { $issued } 张，不一致。
health-coupon-is-still-locked-to = 优惠券 { $coupon } 仍被订单 { $named } 锁定，而该订单{ $status }并已用这张券抵扣，应标记为已在该订单使用。
health-coupon-is-locked-to-order-2 = 优惠券 { $coupon } 被订单 { $named } 锁定，但{ $why }，{ $audience ->
        [customer] 您
       *[staff] 客户
    }无法使用这张券。
health-order-names-a-missing-coupon = 订单 { $no } 记录的优惠券 { $coupon } 查不到。
health-order-should-hold-coupon = 订单 { $no } 应锁定优惠券 { $coupon }，但这张券现在是「{ $coupon_status }」状态，优惠可能无法抵扣。
health-order-should-hold-coupon-bound-elsewhere = 订单 { $no } 应锁定优惠券 { $coupon }，但这张券现在是「{ $coupon_status }」状态（属于订单 { $other }），优惠可能无法抵扣。
health-why-order-missing = 对应订单不存在
health-why-order-uses-another-coupon = 对应订单使用的是另一张券
health-strict-expired-no-discount = 这张券 { $ends } 到期，早于尾款开始支付的时间（{ $opens }），按本场预售的严格规则，付尾款时没有抵扣 { $discount } 元。{ $audience ->
        [customer] 这不是您的过错：请联系客服，客服可以为您补偿这 { $discount } 元。
       *[staff] 尚未补偿：可为客户补偿 { $discount } 元（在补偿额度内）。
    }
health-strict-expired-in-window-no-discount = 这张券 { $ends } 到期，早于付尾款的时间，按本场预售的严格规则，付尾款时没有抵扣 { $discount } 元。{ $audience ->
        [customer] 请联系客服，客服可以为您补偿这 { $discount } 元。
       *[staff] 尚未补偿：可为客户补偿 { $discount } 元（在补偿额度内）。
    }
health-strict-expired-compensated = 这张券 { $ends } 到期，早于尾款开始支付的时间（{ $opens }），按本场预售的严格规则，付尾款时没有抵扣 { $discount } 元；{ $audience ->
        [customer] 已于 { $at } 为您补偿 { $given } 元。
       *[staff] 已于 { $at } 补偿 { $given } 元。
    }
health-strict-expired-in-window-compensated = 这张券 { $ends } 到期，早于付尾款的时间，按本场预售的严格规则，付尾款时没有抵扣 { $discount } 元；{ $audience ->
        [customer] 已于 { $at } 为您补偿 { $given } 元。
       *[staff] 已于 { $at } 补偿 { $given } 元。
    }
health-about-coupon = 券 { $coupon }：
