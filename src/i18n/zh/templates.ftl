# Coupon templates (券模板): the console's list, create form and detail
# page, and a template's rule in words (domain::template::rule_words).

## A rule in words: parts joined by rule-separator.
rule-separator = ，
# A percentage off, as customers say it: $zhe is the 折 figure (9 for 10%
# off, 8.5 for 15% off); 100% off reads 免单. $min and $cap are money, or
# "none" when there is no threshold or no cap.
rule-percent-off = { $min ->
        [none] {""}
       *[other] 满 { $min } 可用，
    }{ $pct ->
        [100] 免单
       *[other] { $zhe }折
    }{ $cap ->
        [none] {""}
       *[other] ，最高减 { $cap }
    }
rule-categories = { $list }类
rule-valid-after-claim = 领取后{ $n }{ $unit ->
        [day] 天
        [hour] 小时
        [minute] 分钟
       *[second] 秒
    }有效
rule-valid-between = { $from } 至 { $until } 有效
rule-usable-from = { $at } 起可用
rule-valid-no-later-than = 最晚 { $at } 到期

## Navigation and titles
templates-nav = 券模板
templates-title = 券模板
template-title = 券模板：{ $name }
template-new = 新建券模板
template-new-title = 新建券模板

## Where a template stands for claiming (domain::template::ClaimStanding)
template-standing-active = 领取中
template-standing-paused = 已暂停
template-standing-not_started = 未开始
template-standing-ended = 已结束

## List
template-standing = 领取状态
template-kind = 优惠方式
template-name-contains = 名称包含
template-none-match = 没有符合条件的券模板。
template-unknown-filter = 筛选条件无法识别，请重新选择。
template-name = 名称
template-rule = 优惠规则
template-stock-heading = 已领 / 总量 / 剩余
template-stock-figures = { $claimed } / { $total } / { $left }
template-unlimited = 不限
template-coupons-by-status = 已发的券

## Create form
template-preview = 规则预览
template-preview-empty = 填好优惠方式和金额后，点「预览」即可看到规则。
template-preview-button = 预览
template-create-button = 创建券模板
template-choose = 请选择
template-value-yuan = 减免金额（元）
template-value-hint = 立减券填写，例如 50 或 49.90
template-percent-off = 折扣（减百分之几）
template-percent-hint = 折扣券填写 1–100，例如 15 表示 8.5 折
template-max-discount-yuan = 最高减免（元）
template-optional = 可不填
template-min-order-yuan = 订单满多少元可用
template-min-order-hint = 不填表示无门槛
template-categories = 适用品类
template-categories-hint = 用逗号分隔；不填表示全部品类
template-validity = 有效期
template-validity-hint = 填「领取后几天有效」为相对有效期；不填则需要填写结束时间（固定时段）。开始时间可不填。
template-valid-days = 领取后几天有效
template-valid-from = 开始时间
template-valid-until = 结束时间
template-business-time = 按营业时区填写
template-total-stock = 总库存
template-stock-unlimited = 库存不限
template-alone = 不可与其他券叠加（订单只能用这一张券）
template-per-user-limit = 每人限领
template-per-user-hint = 不填表示不限
template-claim-ends-at = 领取截止
template-claim-ends-hint = 可不填：到这个时间停止领取，已领的券不受影响
template-needs-operator = 管理券模板需要运营或管理员角色。
template-created = 已创建券模板「{ $name }」。

## Messages beside the create form's fields
template-error-name = 请填写名称（1–200 个字）。
template-error-kind = 请选择优惠方式。
template-error-value = 请填写减免金额，例如 50 或 49.90（最多两位小数，大于 0）。
template-error-percent-off = 折扣请填写 1 到 100 之间的整数。
template-error-max-discount = 最高减免请填写金额，例如 30 或 29.90（最多两位小数，大于 0）。
template-error-min-order = 门槛请填写金额，例如 300 或 299.90（最多两位小数）。
template-error-categories = 品类最多 50 个，每个不超过 64 个字符。
template-error-valid-days = 领取后有效天数请填写 1 到 3660 之间的整数。
template-error-valid-from = 开始时间格式不对，或晚于结束时间。
template-error-valid-until = 请填写结束时间（须晚于开始时间和现在），或填写领取后有效天数。
template-error-total-stock = 总库存请填写 1 到 10 亿之间的整数，或勾选库存不限。
template-error-per-user-limit = 每人限领请填写 1 到 10000 之间的整数，或不填。
template-error-claim-ends-at = 领取截止须是将来的时间。
template-error-form = 无法保存，请检查填写的内容。
template-error-reason = 请填写原因。

## Detail page
template-paused-at = 暂停时间
template-created-at = 创建时间
template-its-coupons = 查看此模板的券
template-history = 变更记录
template-no-history = 暂无变更记录。
template-change = 变更
template-end-claiming = 提前结束领取
template-safe-edit = 改名、增加库存或调整预算
template-change-part = { $field }：{ $value }
template-change-separator = ；
template-manage = 管理
template-reason = 原因（必填，记入变更记录）
template-pause = 暂停领取
template-resume = 恢复领取
template-end-claiming-at = 提前结束领取的时间
template-end-at-button = 在此时间结束领取
template-end-now-button = 立即结束领取
template-save = 保存修改
template-stock-only-grows = 库存只能增加，且不能少于已领的 { $claimed } 张。
template-unlimited-stays = 库存不限，不能改为有限。
template-paused-flash = 已暂停券模板「{ $name }」的领取。
template-resumed-flash = 已恢复券模板「{ $name }」的领取。
template-claiming-ends-flash = 已设置券模板「{ $name }」的领取截止时间。
template-saved-flash = 已保存券模板「{ $name }」。
template-edit = 修改券模板
template-terms = 券的条款
template-terms-locked = 已有券领取，已发出的券保留原条款，故条款不能修改；只能改名、增加库存、调整预算或提前结束领取。
template-stock-any-before-claim = 还没有券被领取，库存可以改成任意数量或不限。
template-duplicate = 复制为新模板
template-copy-name = { $name } 副本

## Why an edit is refused (domain::template::EditRefusal)
template-edit-refusal-stock-may-only-grow = 库存只能增加（不限库存不能改为有限）。
template-edit-refusal-claim-end-passed = 领取截止须是将来的时间。
template-edit-refusal-below-claimed = 库存不能少于已领取的数量。
template-edit-refusal-unsafe-field = 这项会改变已发出的券，不能修改。
template-edit-refusal-changed-meanwhile = 券模板刚被别人修改过，请刷新后再试。
template-edit-refusal-already-claimed = 已有券领取，已发出的券保留原条款，故不能修改条款。
template-edit-refusal-no-budget = 这个券模板没有预算：预算只能在首次领取前设置。
template-edit-refusal-budget-below-used = 预算不能少于这批券已占用或已优惠的金额。
template-budget-edit-hint = 已用 { $used }；可调高，也可调低到不少于已用。

## The staff log's template actions (service::templates::actions)
staff-action-template_create = 创建券模板
staff-action-template_edit = 修改券模板
staff-action-template_pause = 暂停领取
staff-action-template_resume = 恢复领取
rule-shop = 仅限店铺 { $shop }
rule-skus = 仅限 SKU { $list }
rule-exclude-skus = 不含 SKU { $list }
rule-partial-refund-proportional = 部分退款按比例退回
rule-partial-refund-clawback = 部分退款后不满门槛时扣回优惠
rule-not-stackable = 不可与其他券叠加
partial-refund-rule-proportional = 按比例退回
partial-refund-rule-clawback = 不满门槛扣回
template-lines = 适用商品与部分退款
template-shop = 店铺（店铺券）
template-shop-hint = 留空为平台券，可用于任何店铺的商品
template-skus = 仅限 SKU
template-skus-hint = 多个用逗号或空格分隔；留空为不限
template-exclude-skus = 不含 SKU
template-partial-refund-rule = 部分退款时的优惠
template-partial-refund-hint = 退掉部分商品后，剩下的商品不满门槛时怎么办
template-error-shop = 店铺编号最多 128 个字符，不能含空格。
template-error-skus = 每个 SKU 最多 128 个字符，不能含空格；每栏最多 100 个。
template-error-partial-refund-rule = 请从列表中选择部分退款的方式。
template-budget = 预算
template-budget-yuan = 预算（元）
template-budget-hint = 这批券合计最多优惠的金额；留空为不限。超出预算的订单会被拒绝。
template-budget-figures = { $budget }，已用 { $used }（{ $percent }%）
template-no-budget = 不限预算
template-error-budget = 请填写大于 0 的预算金额（元），或留空。
