# What an event row says, for people (domain::event): its action and who
# did it, in timelines and the audit log.

## Actions (domain::event::EventAction)
event-action-claim = 领取
event-action-compensation = 补偿发券
event-action-checkout_lock = 下单锁定
event-action-lock = 付定金锁定
event-action-use = 使用
event-action-cancel_release = 取消订单释放
event-action-refund_release = 退款释放
event-action-release_expired = 释放（已过期）
event-action-swap_lock = 付尾款换券锁定
event-action-expire = 到期
event-action-zombie_release = 释放滞留锁定
event-action-force_release = 强制释放
event-action-staff_release = 客服释放
event-action-invalidate = 作废
event-action-relock = 重新锁定
event-action-mark_used = 标记为已使用
event-action-unarchive = 从归档恢复
event-action-create = 下单
event-action-pay = 付款
event-action-deposit_payment = 付定金
event-action-final_payment = 付尾款
event-action-cancel = 取消订单
event-action-refund = 退款
event-action-partial_refund = 部分退款
event-action-checkout_lock_lapsed = 付款时间已过，订单自动关闭
event-action-presale_timeout = 尾款时间已过，订单自动关闭
event-action-relock_coupon = 订单重新锁定券
event-action-relink_coupon = 订单重新关联券
event-action-mark_coupon_used = 订单的券标记为已使用
event-action-return_coupon = 订单退款后补退回券
event-action-release_coupon = 订单的券被释放
event-action-force_release_coupon = 订单的券被强制释放

## Actors (domain::event::Actor)
actor-staff = 客服后台：{ $name }
actor-api = 商城接口（{ $token }…）
actor-demo = 演示数据
actor-cli = 服务器命令行
actor-customer = 顾客（自助检测页）
event-action-support_requested = 顾客联系客服
event-action-support_request_handled = 客服请求已处理
actor-job-expiry-wheel = 到期任务
actor-job-expiry-sweep = 到期兜底扫描
actor-job-checkout-lapse = 付款超时任务
actor-job-presale-timeout = 尾款超时任务
actor-job-zombie-reaper = 滞留锁定清理
actor-job-reconcile = 对账任务
actor-job-archive = 归档任务
actor-job-webhook-dispatcher = 消息投递任务

## Staff-log actions (service::staff::actions)
staff-action-staff_create = 新建员工账号
staff-action-staff_replace = 重建员工账号
staff-action-role_change = 修改角色
staff-action-password_reset = 重置密码
staff-action-disable = 停用账号
staff-action-enable = 启用账号
staff-action-sign_in = 登录
staff-action-sign_in_failed = 登录失败
staff-action-sign_out = 退出登录
staff-action-password_change = 修改自己的密码
staff-action-reauth_failed = 确认密码失败
staff-action-webhook_add = 添加消息订阅
staff-action-webhook_disable = 停用消息订阅
staff-action-webhook_enable = 启用消息订阅
reason-expired-before-final-strict = 付尾款前已过期（本场为严格规则，不再抵扣）
reason-expired-before-final-swap = 付尾款前已过期（本场为换券或补偿规则）
reason-final-payment-deduction = 预售券在付尾款前过期，且没有同等的券可换，尾款直接补偿
reason-refund-reversal = 订单已全额退款，尾款时给的补偿随之冲回
reason-final-payment-coupon = 预售券在付尾款前过期，且没有同等的券可换，补偿一张同等面额的券
reason-replaces-expired-coupon = 替换付尾款前过期的优惠券
