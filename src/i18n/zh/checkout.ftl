# The checkout picker (选券, POST /users/{user_id}/coupon-options and the
# console's "try a cart"): why a coupon does not fit a cart, and the
# cautions before a presale deposit, in a customer's words.

picker-threshold-not-met = 还差 { $shortfall } 元可用（满 { $threshold } 元可用）。
picker-not-applicable = 仅限{ $categories }使用。
picker-not-started = { $starts } 起可用。
picker-budget-exhausted = 这种券的预算已用完。
picker-warning-expires_before_final_payment = 这张券会在付尾款开始（{ $window }）前过期。按这场预售的规则，到时它不再抵扣尾款，建议换一张券。
picker-warning-may_be_replaced_at_final_payment = 这张券会在付尾款开始（{ $window }）前过期。付尾款时会换成你账户里同类的另一张券，没有的话会给你补偿。

## The console's "try a cart" on a user's page
try-cart-heading = 试算购物车
try-cart-intro = 订单还没下之前，先看看这位用户的哪些券能用在这个购物车上、各减多少、其余的为什么不能用。
try-cart-kind = 订单类型
try-cart-total = 订单金额（元）
try-cart-category = 商品类目
try-cart-campaign = 预售场次
try-cart-no-campaign = 无
try-cart-deposit = 定金（元，仅预售）
try-cart-submit = 试算
try-cart-best = 最优：{ $code }，减 { $discount }。
try-cart-no-best = 没有可以直接推荐的券。
try-cart-usable = 能用（{ $n } 张）
try-cart-unusable = 不能用（{ $n } 张）
try-cart-none = 这位用户没有待使用的券。
try-cart-terms = 优惠
try-cart-saves = 本单减
try-cart-note = 提醒
try-cart-why = 原因
try-cart-error-total = 请输入大于 0 的订单金额，如 399 或 399.50。
try-cart-error-deposit = 请输入定金：大于 0，且不超过订单金额。
try-cart-error-campaign = 预售订单请选一个还在进行的预售场次。
try-cart-error-category = 类目最多 64 个字符。
try-cart-lines = 商品行（可选）
try-cart-lines-hint = 每行一件商品：店铺 品类 数量 单价（元），没有店铺写 -，例如 A 美妆 2 100。填了商品行就不填订单金额和商品类目，并给出最佳叠加组合。
try-cart-error-lines-and-total = 填了商品行时，订单金额和商品类目请留空。
try-cart-error-lines-too-many = 最多 500 行商品。
try-cart-error-line = 第 { $row } 行应为：店铺 品类 数量 单价，例如 A 美妆 2 100；数量 1–9999。
try-cart-error-lines = 请检查商品行：每行 店铺 品类 数量 单价。
try-cart-combination = 最佳叠加组合：{ $codes }，共减 { $discount }。
try-cart-no-combination = 没有可叠加的组合。
