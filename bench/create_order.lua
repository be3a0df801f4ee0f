-- `bench http` row "POST orders, 1 line vs 50": new normal orders of
-- CK_LINES lines each (SKUs across five categories, awkward prices, one to
-- three units), no coupon, each with its own order number
-- CK_PREFIX<row> and an Idempotency-Key. The bench counts the orders and
-- lines made after the run.
dofile(debug.getinfo(1, "S").source:match("^@(.*/)") .. "common.lua")

local prefix = os.getenv("CK_PREFIX") or "new-"
local lines = tonumber(os.getenv("CK_LINES") or "1")

local parts = {}
for i = 1, lines do
   parts[i] = string.format(
      '{"line_id":"L%d","sku":"SKU-%d","category":"c%d","shop_id":null,"quantity":%d,"unit_price_cents":%d}',
      i, i, i % 5, 1 + i % 3, 1000 + 37 * i)
end
local cart = table.concat(parts, ",")

function request()
   local order_no = prefix .. ck.next_row()
   local body = string.format(
      '{"order_no":"%s","user_id":"u%s","kind":"normal","lines":[%s]}',
      order_no, order_no, cart)
   return wrk.format("POST", "/api/v1/orders",
      ck.api_headers(ck.run .. "-" .. order_no), body)
end
