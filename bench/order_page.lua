-- `bench http` row "order page + health check": the support console's
-- order page with its one-click health check run (GET
-- /console/orders/{order}?check=1), for a random one of CK_ROWS pre-made
-- orders named {CK_PREFIX}{n}, signed in with the session cookie CK_COOKIE.
dofile(debug.getinfo(1, "S").source:match("^@(.*/)") .. "common.lua")

local prefix = os.getenv("CK_PREFIX") or "view-"
local rows = tonumber(os.getenv("CK_ROWS") or "1")
local cookie = os.getenv("CK_COOKIE") or ""

function request()
   local order_no = prefix .. math.random(1, rows)
   return wrk.format("GET", "/console/orders/" .. order_no .. "?check=1",
      { ["Cookie"] = cookie })
end
