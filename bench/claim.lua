-- `bench http` rows "claim" and "claim, one template vs 64":
-- POST /api/v1/users/{user}/coupons on the templates of CK_TEMPLATES
-- (comma-separated; the k-th request takes the (k mod n)-th), every request
-- by a new user (per-user limit 1) with its own Idempotency-Key, as the
-- shop's claim button sends it.
dofile(debug.getinfo(1, "S").source:match("^@(.*/)") .. "common.lua")

local templates = {}
for t in string.gmatch(os.getenv("CK_TEMPLATES") or "", "[^,]+") do
   table.insert(templates, t)
end

function request()
   local row = ck.next_row()
   local user = string.format("%s-%d", ck.run, row)
   local template = templates[(row % #templates) + 1] or ""
   return wrk.format("POST", "/api/v1/users/" .. user .. "/coupons",
      ck.api_headers("claim-" .. user),
      '{"template_id":"' .. template .. '"}')
end
