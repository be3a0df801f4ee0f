temporarily-unavailable = 暂时无法查询
we-cannot-read-your-data-right = 系统暂时无法读取您的数据，请稍后刷新页面重试。
you-have-no-coupons = 您还没有优惠券。
you-have-no-orders = 您还没有订单。
order-3 = 订单
deposit-to-pay = 应付定金
final-payment-to-pay = 待付尾款
to-pay = 应付金额
coupon-discount-2 = 优惠券抵扣
order-total = 订单金额
nothing-to-do = 无需任何操作。
please-note-the-above-contact-support = 请留意上面的说明；有疑问可以联系客服。
this-is-not-something-you-did = 这不是您操作的问题。请点下面的“联系客服”，检测结果会随请求一起发给客服，客服可以直接处理。
what-to-do = 下一步：
check-done-your-coupons-and-orders = 检查完成：您的优惠券和订单都正常，无需任何操作。
check-done-there-is-something-to = 检查完成：有需要留意的地方，请看下面的说明。
check-done-we-found-a-problem = 检查完成：发现了需要客服处理的问题，请看下面的说明。
coupons-3 = 优惠券
no-problem-found-nothing-to-do = 没有发现问题，无需任何操作。
you-have-no-messages = 您还没有消息。
unread = 未读
mark-all-as-read = 全部标为已读
checks-that-your-orders-and-coupons = 检查您所有订单和优惠券的状态是否一致，例如券是否被已关闭的订单占用。只读取，不会改动任何东西。
check-my-orders = 一键检查我的订单
coupon-self-check = 优惠券自助检查
one-click-check = 一键检查
this-coupon-is-locked-for-order = 这张券已为订单 { $no } 锁定，付尾款时自动抵扣 { $d } 元。
this-coupon-is-reserved-for-order = 这张券已为订单 { $no } 预留，付款时抵扣 { $d } 元。
this-coupon-is-still-held-by = 这张券仍被订单 { $no } 占用。
this-coupon-is-held-by-order = 这张券被订单 { $order_no } 占用，但订单没有使用它（点“一键检查”查看）。
order-8 = 订单 { $order_no }
this-link-is-for-you-only = 这是您的专属链接，有效期至 { $expires }。请不要转发给别人。
my-coupons = 我的优惠券（{ $n_coupons }）
my-orders = 我的订单（{ $n_orders }）
this-coupon-is-held-run-the-check = 这张券被占用，暂时不能使用（点“一键检查”查看）。
messages-unread = 消息（{ $n } 条未读）
messages = 消息
self-check-link-invalid = 链接无效或已过期
self-check-link-invalid-why = 这个自助检查链接无法打开：它可能已经过期、被改动过，或者不完整。请回到商城 App，重新打开“优惠券自助检查”获取新链接。
self-check-another-coupon = （另一张券）

## Before the check: what an order's card says (service::self_check::order_standing)
sc-order-lapsed = 付款时限已于 { $at } 结束，这笔订单已无法付款，会被自动关闭。
sc-coupon-back-when-closed = 优惠券 { $code } 不会再为这笔订单抵扣；订单关闭后会退回您的账户（届时已过期的除外）。
sc-presale-window-over = 尾款时段已于 { $at } 结束，这笔预售订单已无法付款。
sc-deposit-rules = 您已付的定金 { $deposit } 按商城的定金规则处理；如有疑问请联系客服。
sc-normal-closed = 这笔订单在付款前已关闭，不能再付款。
sc-presale-closed-before-deposit = 这笔预售订单在付定金前已关闭，没有收取定金，也不能再付款。
sc-presale-closed-before-final = 这笔预售订单在付尾款前已关闭，不能再付款。
sc-presale-deposit-refunded = 这笔预售订单在付尾款前已退款，您付的定金 { $deposit } 已退款。
sc-order-refunded = 这笔订单已退款，无需再付款。
sc-partial-refund = 这笔订单已部分退款：退了 { $n } 件商品，退回 { $amount }。
sc-partial-refund-clawback = 其中扣回优惠 { $amount }：你留下的商品已不满这张券的使用门槛，所以按券的规则收回了留下的商品上的优惠。
sc-coupon-kept-for-rest = 券 { $code } 仍用于你没有退的商品；这些商品全部退款后，券会退回给你。
sc-coupon-released-unnamed = 这笔订单的优惠券已从订单上释放。
sc-coupon-still-held = 优惠券 { $code } 仍被这笔订单占用，请点“一键检查”查看。
sc-coupon-back-available = 优惠券 { $code } { $back ->
        [yes] 已退回您的账户
       *[no] 没有被这笔订单使用
    }，{ $ends } 前可以继续使用。
sc-coupon-back-expired = 优惠券 { $code } { $back ->
        [yes] 已退回您的账户
       *[no] 没有被这笔订单使用
    }，但已于 { $ends } 过期，不能再使用。
sc-coupon-back-withdrawn = 优惠券 { $code } { $back ->
        [yes] 已退回您的账户
       *[no] 没有被这笔订单使用
    }，但之后已被作废，不能再使用。
sc-coupon-back-gone-to = 优惠券 { $code } { $back ->
        [yes] 已退回您的账户
       *[no] 没有被这笔订单使用
    }，之后用在了订单 { $no } 上。
sc-final-payment-window = 尾款支付时间：{ $starts } 至 { $ends }
sc-closed-on = 关闭时间
sc-refunded-on = 退款时间

## Before the check: what a coupon's card says
sc-coupon-offer = 优惠内容
sc-coupon-threshold = 使用门槛
sc-threshold-from = 满 { $t } 可用
sc-no-threshold = 无门槛
sc-coupon-categories = 适用品类
sc-all-categories = 全部品类
sc-category-separator = 、
sc-coupon-ends = 有效期至
sc-coupon-ready = 现在可以使用。
sc-coupon-not-started = { $starts } 起可以使用。
sc-coupon-used-on-order = 已在订单 { $order_no } 中使用（{ $at }）。
sc-coupon-used = 已使用（{ $at }）。
sc-coupon-expired = 已过期，不能再使用。
sc-coupon-withdrawn = 已被作废，不能再使用。
sc-coupon-held-not-payable = 这张券被订单 { $no } 占用，但这笔订单已无法付款，不会再抵扣；订单关闭后券会退回您的账户（届时已过期的除外）。
sc-paid-deposit = 已付定金
sc-paid-final = 已付尾款
sc-paid-amount = 已付金额
