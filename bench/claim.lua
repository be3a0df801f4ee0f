-- `bench http` row "claim": POST /api/v1/users/{user}/coupons on one hot
-- template (CK_TEMPLATE), every request by a new user (per-user limit 1)
-- with its own Idempotency-Key, as the shop's claim button sends it.
dofile(debug.getinfo(1, "S").source:match("^@(.*/)") .. "common.lua")

local template = os.getenv("CK_TEMPLATE") or ""

function request()
   local row = ck.next_row()
   local user = string.format("%s-%d", ck.run, row)
   return wrk.format("POST", "/api/v1/users/" .. user .. "/coupons",
      ck.api_headers("claim-" .. user),
      '{"template_id":"' .. template .. '"}')
end
