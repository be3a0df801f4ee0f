# The customers' reminder texts (domain::reminder): the webhook payloads
# carry them in both languages, the in-app copies (user_messages) store the
# key and its arguments and are rendered in the reader's language.
# $count coupons; $days calendar days of the business time zone until the
# earliest coupon ends; $worth and $due, $discount are yuan ("120.00").
reminder-coupons-expiring = 你有 { $count } 张优惠券将于{ $days ->
        [0] 今天
        [1] 明天
       *[other] { " " }{ $days } 天后
    }过期
reminder-coupons-expiring-worth = 你有 { $count } 张优惠券将于{ $days ->
        [0] 今天
        [1] 明天
       *[other] { " " }{ $days } 天后
    }过期，共可省 { $worth } 元
reminder-final-payment-open = 尾款支付已开始，本次尾款 { $due } 元
reminder-final-payment-open-discount = 尾款支付已开始，本次尾款 { $due } 元，已为你抵扣 { $discount } 元
# An instant in the reminder settings' zone, as preformatted parts
# ("07", "01", "08:00"); the strict warning below uses the same form.
reminder-local-stamp = { $month }月{ $day }日 { $time }
reminder-expires-before-final-payment = 订单 { $order_no } 使用的优惠券将于 { $ends_month }月{ $ends_day }日 { $ends_time } 过期，早于尾款开始时间 { $starts_month }月{ $starts_day }日 { $starts_time }；按本场活动规则，尾款时将不再抵扣
# In-app messages written before they were stored as keys (migration
# 0015_user_message_keys): the old rows kept only the finished texts, one
# per language, so their arguments are those texts ($zh here, $en in
# English) and this key shows them as they were.
legacy-text = { $zh }
