this-request-came-from-another-site = 请求来自其他站点，已拒绝。
the-form-has-expired-security-token = 表单已失效（安全令牌不符），请返回页面重试。
not-found = 找不到
the-database-is-unavailable-try-again = 数据库暂时不可用，请稍后重试。
the-sign-in-form-expired-please = 登录表单已失效，请重新输入。
wrong-name-or-password = 用户名或密码错误。
too-many-failed-attempts-try-again = 失败次数过多，请 15 分钟后再试。
you-are-signed-out = 已退出登录。
