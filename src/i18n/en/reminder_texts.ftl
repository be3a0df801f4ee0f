# The customers' reminder texts (domain::reminder): the webhook payloads
# carry them in both languages, the in-app copies (user_messages) store the
# key and its arguments and are rendered in the reader's language.
# $count coupons; $days calendar days of the business time zone until the
# earliest coupon ends; $worth and $due, $discount are yuan ("120.00").
reminder-coupons-expiring = You have { $count } { $count ->
        [one] coupon
       *[other] coupons
    } expiring { $days ->
        [0] today
        [1] tomorrow
       *[other] in { $days } days
    }.
reminder-coupons-expiring-worth = You have { $count } { $count ->
        [one] coupon
       *[other] coupons
    } expiring { $days ->
        [0] today
        [1] tomorrow
       *[other] in { $days } days
    }, worth { $worth } yuan in total.
reminder-final-payment-open = Your final payment is open: { $due } yuan due.
reminder-final-payment-open-discount = Your final payment is open: { $due } yuan due, { $discount } yuan off with your coupon.
# An instant in the reminder settings' zone, as preformatted parts
# ("07", "01", "08:00"); the strict warning below uses the same form.
reminder-local-stamp = { $month }-{ $day } { $time }
reminder-expires-before-final-payment = The coupon on order { $order_no } expires at { $ends_month }-{ $ends_day } { $ends_time }, before the final payment opens at { $starts_month }-{ $starts_day } { $starts_time }; under this campaign's rules it will not apply then.
# In-app messages written before they were stored as keys (migration
# 0015_user_message_keys): the old rows kept only the finished texts, one
# per language, so their arguments are those texts ($en here, $zh in
# Chinese) and this key shows them as they were.
legacy-text = { $en }
