# Bulk issue (定向发券) and bulk void (批量作废): src/web/bulk.rs, domain::bulk.

## Job kinds (domain::bulk::JobKind)
bulk-kind-bulk_issue = 定向发券
bulk-kind-bulk_void = 批量作废

## Job statuses (domain::bulk::JobStatus)
bulk-status-loading = 正在读入名单
bulk-status-running = 进行中
bulk-status-done = 已完成
bulk-status-failed = 任务失败

## Why a line was skipped or failed (domain::bulk::LineReason)
bulk-reason-out_of_stock = 库存不足
bulk-reason-claim_limit_reached = 用户已达每人限领
bulk-reason-template_inactive = 券模板当前不可发放
bulk-reason-invalid_user_id = 用户 ID 无效
bulk-reason-not_found = 没有这张券
bulk-reason-other_template = 券不属于这个模板
bulk-reason-locked = 券被订单锁定，未作废
bulk-reason-used = 券已被使用，未作废
bulk-reason-expired = 券已过期，未作废
bulk-reason-invalidated = 券早已作废
bulk-reason-changed = 处理时券的状态刚好变化
bulk-reason-other = 其他原因

## The template page's part
bulk-section = 定向发券与批量作废
bulk-issue-title = 定向发券
bulk-void-title = 批量作废
bulk-no-jobs = 这个模板还没有批量任务。
bulk-kind = 任务类型
bulk-status = 任务状态
bulk-progress = 进度
bulk-progress-short = { $done } / { $total }
bulk-started-at = 开始时间

## Bulk issue form
bulk-issue-page-title = 定向发券：{ $name }
bulk-issue-explained = 给名单里的每位用户发一张这个模板的券，照常扣库存、受每人限领约束；库存不足或已达限领的用户会被跳过并注明原因。同一份名单再次提交不会重复发券。
bulk-user-ids = 用户 ID 名单
bulk-user-ids-note = 或在此粘贴：每行一个用户 ID，可有表头 user_id。
bulk-notify = 发券后通知用户
bulk-notify-yes = 通知
bulk-notify-no = 不通知
bulk-issue-start = 开始发券
bulk-back-to-template = 返回券模板
bulk-started-flash = 任务已开始，共 { $total } 行。
bulk-started-plain = 任务已开始。
bulk-error-user-ids = 请每行填写一个用户 ID（至少一行）。
bulk-user-file = 用户 ID 名单文件（CSV）
bulk-user-file-note = 每行一个用户 ID，可有表头 user_id；最多 1,000,000 行（64 MiB）。
bulk-error-file = 这个文件无法使用：须为文本，每行一个用户 ID（至少一行，最多 1,000,000 行）。修改后请重新选择文件。
bulk-error-file-and-list = 请只提供文件或粘贴名单中的一种。请重新选择文件，或清空粘贴的名单。
bulk-error-upload = 上传的内容不完整。请重新选择文件后再提交。

## Bulk void form
bulk-void-page-title = 批量作废：{ $name }
bulk-void-preview = 将作废 { $available } 张待使用的券；{ $locked } 张锁定中、{ $used } 张已使用的券不受影响，计为跳过。
bulk-void-next = 下一步：确认
bulk-void-confirm-question = 确定要作废这个模板的 { $available } 张待使用券吗？作废后不能恢复。
bulk-void-confirm = 确认作废
bulk-void-file = 只作废文件中的券（可选）
bulk-void-file-note = CSV 文件，每行一个券 ID，可有表头 coupon_id；在此最多 100,000 行（更大的名单请通过接口）。不选文件时，作废本模板全部待使用的券。
bulk-void-list-preview = 文件列出 { $count } 张券：其中属于本模板且待使用的券将被作废；锁定中、已使用及其他券不受影响，计为跳过。
bulk-void-list-confirm-question = 确认作废所列 { $count } 张券中待使用的券？此操作无法撤销。
bulk-error-void-file = 这个文件无法使用：须为文本，每行一个券 ID（至少一行，最多 100,000 行）。修改后请重新选择文件。

## Job page
bulk-job-title = { $kind }：{ $name }
bulk-job = 批量任务
bulk-refreshing = 任务进行中，本页每 3 秒自动刷新。
bulk-refresh-now = 立即刷新
bulk-total = 总行数
bulk-done = 已处理
bulk-issued = 已发券
bulk-voided = 已作废张数
bulk-skipped = 跳过
bulk-failed = 失败行数
bulk-reasons = 跳过与失败的原因
bulk-started-by = 发起人
bulk-finished-at = 完成时间
bulk-results-file = 下载逐行结果（CSV）
bulk-id-job = 任务 ID
bulk-uploads-busy = 正在处理其他上传，请 { $seconds } 秒后再试。
