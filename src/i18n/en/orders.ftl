# The order list for support (/console/orders).
order-list-title = Orders
order-list-prefix = Order number starts with
order-list-created-from = Created from (day)
order-list-created-to = Created through (day)
order-list-count = { $count } orders on this page, newest first
order-list-empty = No orders match. Drop a filter or widen the days, or find one order by its number with the search box above.
order-list-bad-status = Choose an order status from the list.
order-list-bad-kind = Choose normal order or presale order.
order-list-bad-campaign = Choose a campaign from the list.
order-list-bad-lock = Choose a coupon lock from the list.
order-list-bad-day = Type a day like 2026-12-01; the "through" day must not come before the "from" day.
order-list-bad-prefix = Type at most 128 characters of the order number.
order-list-bad-cursor = This page link is no longer valid; start again from the first page.
