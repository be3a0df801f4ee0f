# 客服用的订单列表（/console/orders）。
order-list-title = 订单
order-list-prefix = 订单号开头
order-list-created-from = 创建日期从
order-list-created-to = 创建日期至（含当天）
order-list-count = 本页 { $count } 个订单，最新的在前
order-list-empty = 没有符合条件的订单。去掉一个筛选条件或放宽日期，或用上方搜索框按订单号查找。
order-list-bad-status = 请从列表中选择订单状态。
order-list-bad-kind = 请选择普通订单或预售订单。
order-list-bad-campaign = 请从列表中选择预售场次。
order-list-bad-lock = 请从列表中选择券锁定状态。
order-list-bad-day = 请输入形如 2026-12-01 的日期；“至”不能早于“从”。
order-list-bad-prefix = 订单号开头最多 128 个字符。
order-list-bad-cursor = 此翻页链接已失效，请从第一页重新开始。
