-- `bench http` row "POST refunds, 1 unit vs whole order": over pre-made
-- paid orders of three lines with a used coupon (CK_PREFIX<row>, each
-- order once), a refund by line of one unit of line "a" (CK_MODE=partial:
-- POST /api/v1/orders/{no}/refunds) or the whole-order refund
-- (CK_MODE=whole: POST /api/v1/orders/{no}/refund), each with an
-- Idempotency-Key. The bench counts the refunds made after the run.
dofile(debug.getinfo(1, "S").source:match("^@(.*/)") .. "common.lua")

local prefix = os.getenv("CK_PREFIX") or "rfp-"
local mode = os.getenv("CK_MODE") or "partial"

function request()
   local order_no = prefix .. ck.next_row()
   if mode == "whole" then
      return wrk.format("POST", "/api/v1/orders/" .. order_no .. "/refund",
         ck.api_headers(ck.run .. "-whole-" .. order_no), '{"reason":"bench"}')
   end
   return wrk.format("POST", "/api/v1/orders/" .. order_no .. "/refunds",
      ck.api_headers(ck.run .. "-part-" .. order_no),
      '{"refund_id":"r1","lines":[{"line_id":"a","quantity":1}],"reason":"bench"}')
end
