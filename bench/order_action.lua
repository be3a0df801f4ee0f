-- `bench http` rows "pay", "deposit-payment" and "final-payment": POST
-- /api/v1/orders/{CK_PREFIX}{row}/{CK_ACTION} over pre-made orders, each
-- order once (thread t takes rows t, t + T, ...), with an Idempotency-Key.
-- The bench made CK_ROWS orders; a thread that runs past its share gets
-- 404s, counted as non-2xx.
dofile(debug.getinfo(1, "S").source:match("^@(.*/)") .. "common.lua")

local prefix = os.getenv("CK_PREFIX") or "pay-"
local action = os.getenv("CK_ACTION") or "pay"

function request()
   local order_no = prefix .. ck.next_row()
   return wrk.format("POST", "/api/v1/orders/" .. order_no .. "/" .. action,
      ck.api_headers(ck.run .. "-" .. action .. "-" .. order_no), "{}")
end
