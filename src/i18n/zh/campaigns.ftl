# Presale campaigns (预售场次) for operators: the console's campaign pages
# (web::campaigns), the refusal of a change after the final-payment window
# opened, and the final payment's message under the coupon compensation mode.

refusal-campaign_window_open = 尾款时段已经开始，这场预售的尾款策略和补偿方式不能再修改。
final-payment-compensated-coupon = 原优惠券已过期，平台补偿你一张 { $compensation } 元的新优惠券（已发到你的账户），本次尾款 { $due } 元。

nav-campaigns = 预售场次
campaigns-title = 预售场次
campaigns-explained = 每场预售的尾款时段、尾款策略和订单情况，最新建的在前。
campaign-title = 预售场次详情
campaign-none-yet = 还没有预售场次。
campaign-bad-cursor = 翻页参数无效，请从第一页重新打开列表。
campaign-none-match = 没有符合条件的预售场次。
campaign-unknown-filter = 筛选条件无法识别，请重新选择。
campaign-name-contains = 名称包含
campaign-phase = 所处阶段
campaign-phase-before-final-payment = 尾款未开始
campaign-phase-final-payment-open = 尾款进行中
campaign-phase-ended = 尾款已截止
campaign-needs-operator = 创建或修改预售场次需要运营或管理员权限。
campaign-change-needs-operator = 修改尾款策略或补偿方式需要运营或管理员权限。
campaign-new = 新建预售场次
campaign-new-explained = 时间按业务时区填写；尾款策略不选时为“定金锁定”。
campaign-create-button = 创建预售场次
campaign-created = 已创建预售场次「{ $name }」。
campaign-created-plain = 已创建预售场次。
campaign-field-starts = 尾款开始时间（{ $zone }）
campaign-field-ends = 尾款截止时间（{ $zone }）
campaign-error-name = 请填写名称，最多 200 个字。
campaign-error-time = 请填写完整的日期和时间，例如 2026-11-11 20:00。
campaign-error-ends = 尾款截止时间必须晚于开始时间。
campaign-error-policy = 请选择一种尾款策略。
campaign-error-mode = 请选择一种补偿方式。

campaign-standing = 尾款时段状态
campaign-opens-in = { $span }后开始付尾款
campaign-closes-in = 尾款进行中，{ $span }后截止
campaign-closed-ago = 尾款已于 { $span }前截止
campaign-span-days = { $days } 天 { $hours } 小时
campaign-span-hours = { $hours } 小时 { $minutes } 分钟
campaign-span-minutes = { $minutes } 分钟
campaign-orders = 订单
campaign-counts = 已付定金 { $deposit_paid } · 已付尾款 { $final_paid } · 已关闭或退款 { $closed }
campaign-coupons-past-end = 尾款开始时，有 { $n } 张锁定的优惠券已过了自己的有效期。
campaign-past-end-lock = 本场是定金锁定：这些券付尾款时仍按付定金时的金额抵扣。
campaign-past-end-strict = 本场是严格过期：这些券付尾款时不再抵扣。
campaign-past-end-swap = 本场是换券或补偿：这些券付尾款时会换成客户同类的券，没有的话给予补偿。

campaign-policy-heading = 尾款策略说明
campaign-policy-staff-lock = 定金锁定：付定金时锁定的优惠券，即使在付尾款前过期，付尾款时仍按付定金时记下的金额抵扣。平台不需要补偿。
campaign-policy-staff-strict = 严格过期：付尾款时如果优惠券已过期，就不再抵扣，客户按原价付尾款。平台不补偿；客服可能会收到投诉。
campaign-policy-staff-swap = 换券或补偿：付尾款时如果优惠券已过期，自动换用客户账户里同类、可用、抵扣不少于原金额的券；没有这样的券，就按原抵扣金额补偿客户（方式见下面的补偿方式）。
campaign-customer-words = 客户看到的说明
campaign-customer-words-example = 举例：一张 50.00 元的券，在尾款开始前一天到期，订单 399.00 元、定金 100.00 元。客户在自助检查、下单选券和付尾款时分别看到：
campaign-mode = 补偿方式
campaign-mode-deduction = 从尾款中直接扣减
campaign-mode-coupon = 发一张等额的新优惠券
campaign-mode-staff-deduction = 从尾款中直接扣减：补偿金额从这笔尾款里减掉，记入补偿台账。
campaign-mode-staff-coupon = 发一张等额的新优惠券：尾款照常支付，同时在付尾款的同一笔操作里给客户发一张等额的补偿券，记入补偿台账。
campaign-mode-applies = 补偿方式只在没有可换的券、需要补偿时生效。
campaign-mode-applies-only-to-swap = 补偿方式只对“换券或补偿”策略生效；其他策略不做补偿。

campaign-change-heading = 修改
campaign-window-opened-no-change = 尾款时段已经开始，尾款策略和补偿方式不能再修改。
campaign-new-policy = 新的尾款策略
campaign-preview-button = 预览影响
campaign-change-mode = 修改补偿方式
campaign-preview-title = 修改「{ $name }」的尾款策略
campaign-preview-judged-at = 按此时判断
campaign-preview-orders-read = 已付定金的订单
campaign-preview-changed = 付尾款结果会改变的订单
campaign-extra-cost = 增加的补偿金额
campaign-preview-at-least = 至少 { $n }
campaign-preview-explained = 每笔已付定金的订单都按尾款开始那一刻、用付尾款时同样的规则判断；假定届时没有可换的券，所以补偿金额是这次修改最多会增加的金额。
campaign-outcome-now = 现在的结果
campaign-outcome-then = 修改后的结果
campaign-outcome-applied = 照常抵扣
campaign-outcome-no-discount = 券已过期，不再抵扣
campaign-outcome-swapped = 换用另一张券
campaign-outcome-compensated = 给予补偿
campaign-outcome-none = 未用券
campaign-reason = 修改原因（必填，记入修改记录）
campaign-confirm-policy = 确认修改尾款策略
campaign-policy-changed = 尾款策略已改为：{ $policy }。
campaign-mode-title = 修改「{ $name }」的补偿方式
campaign-confirm-mode = 确认修改补偿方式
campaign-mode-changed = 补偿方式已改为：{ $mode }。

campaign-history = 修改记录
campaign-no-history = 还没有修改记录。
campaign-what = 修改项
campaign-change-created = 创建
campaign-change-created-with = 尾款策略：{ $policy }；补偿方式：{ $mode }

## The staff log's words for the campaigns' actions (service::campaigns::actions)
staff-action-campaign_create = 新建预售场次
staff-action-campaign_policy_change = 修改尾款策略
staff-action-campaign_compensation_mode_change = 修改补偿方式
