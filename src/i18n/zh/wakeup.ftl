# 到期打散与过期前唤醒

## 到期打散（券模板）
rule-expiry-spread = 到期时间打散：最多提前 { $n } { $unit ->
        [day] 天
        [hour] 小时
        [minute] 分钟
       *[second] 秒
    }
template-expiry-spread = 到期打散
template-no-expiry-spread = 不打散（按模板到期时间）
template-expiry-spread-minutes = 到期打散（分钟）
template-expiry-spread-hint = 可选。每张券按固定的随机量最多提前这么多分钟到期（绝不晚于承诺），避免大量券同一时刻过期；须短于有效期，最多 7 天。
template-error-expiry-spread = 请填写 0 到 10080 之间的整数分钟，且须短于有效期

## 过期前唤醒：顾客收到的文字（$count 张券，$days 为营业时区的自然日，$worth 为元或 none）
wakeup-message = 你有 { $count } 张优惠券将于{ $days ->
        [0] 今天
        [1] 明天
       *[other] { " " }{ $days } 天后
    }过期{ $worth ->
        [none] { "" }
       *[other] ，共可省 { $worth } 元
    }，别错过
wakeup-message-bonus = 你有 { $count } 张优惠券将于{ $days ->
        [0] 今天
        [1] 明天
       *[other] { " " }{ $days } 天后
    }过期{ $worth ->
        [none] { "" }
       *[other] ，共可省 { $worth } 元
    }；另送你一张 { $bonus } 的券，{ $min ->
        [none] 无门槛
       *[other] 满 { $min } 可用
    }

## 过期前唤醒：运营控制台
wakeup-nav = 过期唤醒
wakeup-title = 过期前唤醒
wakeup-intro = 在券到期前一段时间，提醒最近活跃、手里有即将过期券的顾客，可再送一张门槛更低的唤醒券。每张即将过期的券最多唤醒一次；按比例留出对照组（不发任何消息），用来比较核销率。
wakeup-rules = 唤醒规则
wakeup-rule = 唤醒规则
wakeup-none = 还没有唤醒规则。
wakeup-new = 新建唤醒规则
wakeup-name = 名称
wakeup-lead = 唤醒时间
wakeup-lead-hours = 到期前多少小时唤醒
wakeup-lead-hint = 例如 24 表示到期前 1 天；1 到 720 小时。
wakeup-active-days = 近几天活跃
wakeup-active-hint = 顾客在这么多天内有浏览、加购或访问自助查询页才会被唤醒；1 到 90 天。
wakeup-templates = 适用券模板
wakeup-templates-hint = 不勾选表示全部券模板。
wakeup-all-templates = 全部券模板
wakeup-bonus = 唤醒券
wakeup-bonus-hint = 可选。从这个券模板给被唤醒的顾客再领一张券（占用该模板的库存和每人限领）。
wakeup-no-bonus = 不发券
wakeup-control = 对照组
wakeup-control-hint = 这个百分比的顾客固定作为对照组，不发任何消息；0 到 50。
wakeup-create = 创建规则
wakeup-created-flash = 已创建唤醒规则「{ $name }」
wakeup-status = 状态
wakeup-active = 生效中
wakeup-paused = 已暂停
wakeup-pause = 暂停规则
wakeup-resume = 恢复规则
wakeup-paused-flash = 规则已暂停
wakeup-resumed-flash = 规则已恢复
wakeup-reason = 原因
wakeup-rule-title = 唤醒规则：{ $name }
wakeup-who = 唤醒谁
wakeup-active-words = 近 { $days } 天有浏览、加购或访问的顾客
wakeup-active-hours-words = 近 { $hours } 小时有浏览、加购或访问的顾客
wakeup-control-words = { $pct }% 的顾客作为对照组，不发任何消息
wakeup-created-at = 创建
wakeup-all-rules = 全部唤醒规则
wakeup-results = 效果
wakeup-results-note = 到期券在唤醒（或对照组的同一时刻）之后、到期之前被核销的数量。对照组和唤醒组按顾客固定划分，两组核销率之差就是唤醒带来的提升。
wakeup-compare = 唤醒组核销率 { $sent }，对照组 { $control }
wakeup-group = 分组
wakeup-outcome-sent = 已唤醒
wakeup-outcome-control = 对照组
wakeup-outcome-inactive = 不活跃（未发送）
wakeup-outcome-ordered = 之后已下单（跳过，未发送）
wakeup-users = 顾客数
wakeup-coupons = 即将过期的券
wakeup-used = 到期前核销
wakeup-used-share = 核销率
wakeup-bonus-coupons = 唤醒券
wakeup-needs-operator = 唤醒规则需要运营或管理员角色。
wakeup-error-name = 请填写 1 到 200 个字的名称
wakeup-error-lead = 请填写 1 到 720 之间的整数小时
wakeup-error-active = 请填写 1 到 90 之间的整数天
wakeup-error-templates = 所选券模板不存在
wakeup-error-bonus = 所选唤醒券模板不存在
wakeup-error-control = 请填写 0 到 50 之间的整数
wakeup-error-reason = 请填写原因
staff-action-wakeup_rule_create = 创建唤醒规则
staff-action-wakeup_rule_pause = 暂停唤醒规则
staff-action-wakeup_rule_resume = 恢复唤醒规则
