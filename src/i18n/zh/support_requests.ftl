# 顾客在自助检测页联系客服（联系客服），以及客服的请求队列。

## 自助检测页（顾客看到的）
sc-contact-support = 联系客服
sc-support-lead = 还有问题？检测结果和您的留言会一起发给客服，客服会尽快联系您。
sc-support-note-label = 想补充的话（可不填）
sc-support-note-too-long = 留言最多 500 个字，请删短一些。
sc-support-note-control = 留言里有无法识别的字符，请删掉后再发送。
sc-support-sent = 已于 { $at } 发给客服，客服会尽快联系您。如需补充，可在 { $next } 之后再发送一次。
sc-support-no-such-order = 没有找到这个订单
sc-support-no-such-order-why = 这个订单不在您的账户里。请回到检测结果，从您自己的订单下联系客服。
sc-support-back-to-check = 回到检测结果

## 控制台：客服请求
nav-support-requests = 客服请求
support-requests-title = 客服请求
support-requests-intro = 顾客在自助检测页点“联系客服”发来的请求：包含当时的检测结果和顾客的留言。最早的排在最上面；处理完请标为已处理。
support-requests-open-n = 待处理（{ $n }）
support-requests-handled-tab = 最近已处理
support-requests-none-open = 没有待处理的客服请求。
support-requests-none-handled = 还没有已处理的客服请求。
support-requests-more = 显示 { $shown } 条，共 { $total } 条。
support-requests-of-order = 这个订单的客服请求
support-request-open = 待处理
support-request-handled = 已处理
support-request-asked-at = 提交于
support-request-customer = 顾客
support-request-note = 顾客留言
support-request-no-note = （顾客没有留言）
support-request-findings = 当时的检测结果
support-request-no-findings = （没有检测结果）
support-request-mark-handled = 标为已处理
support-request-handled-by = { $by } 已处理
support-request-done = 已将订单 { $order_no } 的客服请求标为已处理。
support-request-already-handled = 这条客服请求已经有人处理过了。
what-support-request = 客服请求
queue-support-requests = 条顾客的客服请求待处理
