-- `bench http` row "healthz": GET /healthz, the HTTP stack's own ceiling
-- (routing and every middleware, no database).
dofile(debug.getinfo(1, "S").source:match("^@(.*/)") .. "common.lua")

function request()
   return wrk.format("GET", "/healthz")
end
