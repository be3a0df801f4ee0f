# The API's error messages (error.rs), written for a customer.
api-error-invalid_request = 请求的内容有误，请检查后重试。
api-error-invalid_field = 请求中的“{ $field }”填写有误，请检查后重试。
api-error-unauthorized = 没有有效的访问凭证。
api-error-forbidden = 没有权限进行这项操作。
api-error-not_found = 没有找到要查询的内容。
api-error-rate_limited = 请求太频繁了，请稍后再试。
api-error-unavailable = 服务暂时不可用，本次没有做任何更改，请稍后再试。
api-error-idempotency_key_reused = 这个请求编号已用于另一笔不同的请求。
api-error-idempotency_in_progress = 同一笔请求仍在处理中，请稍后再查看结果。
api-error-refused = 当前状态不允许这项操作。
