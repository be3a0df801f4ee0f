# Domain terms, keyed by the domain's enums: one word per thing, used by
# every page, the health check, the API and the reminders alike.

## Coupon statuses (domain::coupon::CouponStatus)
coupon-status-available = 待使用
coupon-status-locked = 锁定中
coupon-status-used = 已使用
coupon-status-expired = 已过期
coupon-status-invalidated = 已作废

## Order statuses (domain::order::OrderStatus)
order-status-pending_payment = 待付款
order-status-paid = 已付款
order-status-pending_deposit = 待付定金
order-status-deposit_paid = 已付定金
order-status-final_paid = 已付尾款
order-status-closed = 已关闭
order-status-refunded = 已退款

## An order's hold on its coupon (lock_status)
lock-status-none = 无
lock-status-locked = 锁定中
lock-status-used = 已使用
lock-status-released = 已释放

## How a coupon came to its holder (domain::coupon::CouponSource)
coupon-source-claim = 用户领取
coupon-source-compensation = 补偿发放

## Discount kinds (domain::discount::DiscountKind)
discount-kind-fixed = 立减
discount-kind-percent = 折扣

## Health-check results
result-ok = 正常
result-warning = 注意
result-problem = 异常

## Staff roles
role-support = 客服
role-operator = 运营
role-admin = 管理员

## Anything not (yet) in the catalog
term-unknown = 未知

## Refusals (service::Refusal), in a customer's words
refusal-out_of_stock = 这批券已经领完了。
refusal-claim_limit_reached = 你领取这张券的次数已达上限。
refusal-template_inactive = 这张券现在不能领取或使用。
refusal-coupon_not_owned = 这张券不属于这个账户。
refusal-coupon_not_available = 这张券现在不能使用（可能已使用、被订单锁定或已作废）。
refusal-coupon_expired = 这张券已过期。
refusal-coupon_not_started = 这张券还没到可以使用的时间。
refusal-threshold_not_met = 订单金额还没达到这张券的使用门槛。
refusal-coupon_not_applicable = 这张券不适用于订单里的商品。
refusal-coupons_not_combinable = 这几张券不能在同一订单上叠加使用。
refusal-budget_exhausted = 这种券的预算已用完，暂时不能使用。
refusal-detail-coupon = 券 { $coupon }。
refusal-detail-coupon-short = 券 { $coupon } 还差 { $short }。
refusal-detail-not-stackable = 券 { $coupon } 不可与其他券叠加。
refusal-detail-same-shop = 券 { $first } 和 { $second } 都是店铺 { $shop } 的券：每个店铺只能用一张。
refusal-detail-two-platform = 券 { $first } 和 { $second } 都是平台券：每个订单只能用一张。
refusal-order_exists = 这个订单号已经存在。
refusal-outside_payment_window = 现在不在付尾款的时间内。
refusal-coupon_lock_mismatch = 这张券没有锁定在这个订单上。
refusal-detail-not-locked = 这张券已不再为这个订单锁定（可能已释放、过期或用在了别的订单上），请联系客服处理这个订单。
refusal-detail-locked-to-another-order = 这张券已锁定在另一个订单上，请联系客服处理这个订单。
refusal-order_active = 订单仍在进行中，不能直接释放这张券；确需释放请由运营勾选强制释放。
refusal-invalid_order_status = 订单当前的状态不允许这项操作。
refusal-order_kind_mismatch = 这项操作不适用于这类订单（普通订单与预售订单的流程不同）。
refusal-checkout_lock_expired = 这笔订单的付款时间已过，订单将被关闭，请重新下单。
refusal-compensation_limit_exceeded = 超出客服补偿额度（单张或当日），请联系运营。
refusal-order_not_owned = 这个订单不属于这个用户。
refusal-coupon_not_on_order = 这张券不是这个订单上的券。
refusal-repair_not_applicable = 当前情况不需要或不允许这项修复。
refusal-edit_not_allowed = 这项修改会改变已发出的券或降低库存，不能修改：券模板只能改名称、增加库存（不可少于已领数量）、调整预算（不可少于已用）、提前结束领取。
