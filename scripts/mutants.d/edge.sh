# Mutants of the HTTP edge (issue 17, items 7, 10, 11, 16 and the /mcp Host
# pin of 18): the Host and Origin rules, the one strict JSON decoder, Bearer
# only, contracts.CheckID on every identifier, the body deadline, and a
# closed NATS connection reported unhealthy. Sourced by scripts/mutants.sh;
# see its header for the m NAME PACKAGE RUN-REGEX NEEDS FILE OLD NEW form.

gwp=./services/gateway/
edge=services/gateway/edge.go
body=services/gateway/body.go
auth=services/gateway/auth.go
ids=contracts/ids.go

# Host: a rebinding name is refused on every route ...
m edge-host-check-removed "$gwp" 'TestRebindingHostIsRefusedOnEveryRoute|TestMCPRefusesARebindingHost' - \
	"$edge" 'if !g.hostAllowed(r.Host) {' 'if false {'
# ... /mcp included, on its own ...
m mcp-host-check-removed "$gwp" 'TestMCPRefusesARebindingHost' - \
	"$edge" 'if !g.hostAllowed(r.Host) {' 'if !g.hostAllowed(r.Host) && r.URL.Path != "/mcp" {'
# ... without tokens only loopback names, IP literals and listed names pass ...
m edge-host-any-name-local "$gwp" 'TestRebindingHostIsRefusedOnEveryRoute' - \
	"$edge" 'return len(g.cfg.Tokens) > 0 && len(g.allowedHosts) == 0' 'return true'
m edge-host-localhost-prefix "$gwp" 'TestRebindingHostIsRefusedOnEveryRoute' - \
	"$edge" 'strings.HasSuffix(name, ".localhost")' 'strings.HasPrefix(name, "localhost")'
# ... and with tokens a listed set of names restricts them.
m edge-host-list-ignored-with-tokens "$gwp" 'TestHostRuleWithTokens' - \
	"$edge" 'return len(g.cfg.Tokens) > 0 && len(g.allowedHosts) == 0' 'return len(g.cfg.Tokens) > 0'

# Origin: a page elsewhere is refused, another port of this machine too.
m edge-origin-check-removed "$gwp" 'TestCrossOriginRequestsAreRefused' - \
	"$edge" 'origin != "" && !preflight && !g.originAllowed(origin, r.Host)' 'origin == "\x00" && !preflight'
m edge-origin-port-ignored "$gwp" 'TestCrossOriginRequestsAreRefused' - \
	"$edge" 'return norm(originHost) == norm(host)' 'return hostName(norm(originHost)) == hostName(norm(host))'

# Bodies: declared application/json, a body declaring nothing included ...
m body-untyped-accepted "$gwp" 'TestJSONBodiesAreStrict' - \
	"$body" 'if mt, _, err := mime.ParseMediaType(ct); err != nil || mt != echo.MIMEApplicationJSON {' 'if mt, _, err := mime.ParseMediaType(ct); ct != "" && (err != nil || mt != echo.MIMEApplicationJSON) {'
# ... keys exact ...
m body-keys-any-case "$gwp" 'TestJSONBodiesAreStrict|TestStartRunRefusals' - \
	"$body" 'if ft, ok = fields[key]; !ok {' 'if ft, ok = fields[key]; !ok && false {'
# ... and once ...
m body-keys-repeated "$gwp" 'TestJSONBodiesAreStrict|TestStartRunRefusals' - \
	"$body" 'if seen[key] {' 'if false && seen[key] {'
# ... by the one decoder, on every body route: the gate, and decodeJSON
# behind it for a handler the gate did not serve (either alone keeps bodies
# strict, so the mutant takes both away).
m body-gate-not-applied "$gwp" 'TestStartRunRefusals|TestEveryRouteRefusesHostileIDs' - \
	services/gateway/routes.go 'mw = append(mw, bodyGate(reflect.TypeOf(r.Request)))' '_ = reflect.TypeOf(r.Request)' \
	"$body" $'\t_, err := decodeStrict(c.Response(), c.Request(), v)\n\treturn err' $'\treturn json.NewDecoder(c.Request().Body).Decode(v)'

# Only Bearer authenticates, with tokens and without.
m auth-any-scheme "$gwp" 'TestOnlyBearerAuthenticates' - \
	"$auth" '!strings.EqualFold(scheme, "Bearer")' 'scheme == ""'
m auth-local-any-header "$gwp" 'TestOnlyBearerAuthenticates' - \
	"$auth" 'if sent && (len(header) != 1 || !bearer) {' 'if sent && len(header) != 1 {'

# Identifiers: one rule, its length and alphabet ...
m id-length-unbounded ./contracts/ 'TestCheckIDRefusesEveryHostileShape' - \
	"$ids" 'case len(value) > MaxIDLength:' 'case len(value) > 100*MaxIDLength:'
m id-dot-allowed ./contracts/ 'TestCheckIDRefusesEveryHostileShape' - \
	"$ids" "b == '-' || b == '_'" "b == '-' || b == '_' || b == '.'"
# ... applied to every body field tagged id ...
m id-body-fields-unchecked "$gwp" 'TestEveryRouteRefusesHostileIDs|TestALongConnectionIDLeavesTheServerServing|TestMCPListTablesRefusesAHostileID' - \
	"$body" 'if err := contracts.CheckID(contracts.IDKind(kind), fv.String()); err != nil {' 'if err := error(nil); kind == "" && err != nil {'
# ... and to every identifier path parameter.
m id-path-params-unchecked "$gwp" 'TestEveryRouteRefusesHostileIDs' - \
	"$edge" 'contracts.CheckID(kind, c.Param(name))' 'contracts.CheckID(kind, "ok"+name[:0])'

# A slow body is answered 408, and a failed body keeps its deadline.
m body-deadline-removed "$gwp" 'TestSlowBodiesAreTimedOutButStreamsLive' - \
	"$edge" $'\t\tg.bodyDeadline(c)\n' ''
m body-deadline-lifted-on-failure "$gwp" 'TestSlowBodiesAreTimedOutButStreamsLive' - \
	"$edge" 'if err == io.EOF && !b.lifted {' 'if err != nil && !b.lifted {'

# A closed NATS connection makes the process unhealthy; connections keep
# reconnecting.
m healthz-ignores-closed-nats "$gwp" 'TestHealthIsUnhealthyOnceNATSIsClosed' - \
	services/gateway/health.go 'if g.nc.IsClosed() {' 'if false {'
m nats-reconnects-give-up ./pkg/natsx/ 'TestConnectionsReconnectForever' - \
	pkg/natsx/embedded.go 'nats.MaxReconnects(-1),' 'nats.MaxReconnects(60),'

# In Chromium: with the edge's rules off, a page on a second loopback origin
# starts a run with a no-cors Blob, and a rebinding name reads the API.
m browser-edge-off ./services/sonde/e2e/ 'TestBrowserEdgeRefusesCrossSiteAndRebinding' - \
	"$edge" 'if !g.hostAllowed(r.Host) {' 'if false {' \
	"$edge" 'origin != "" && !preflight && !g.originAllowed(origin, r.Host)' 'origin == "\x00" && !preflight' \
	"$body" 'if mt, _, err := mime.ParseMediaType(ct); err != nil || mt != echo.MIMEApplicationJSON {' 'if mt, _, err := mime.ParseMediaType(ct); ct != "" && (err != nil || mt != echo.MIMEApplicationJSON) {'

# A parameter the executor cannot bind is the caller's mistake: 400.
m param-mistake-not-400 "$gwp" 'TestParameterMistakesAre400' - \
	services/gateway/query.go 'case contracts.RefuseBadRequest:' 'case "never":'
m describe-name-left-escaped ./services/gateway/ 'TestDescribeTakesAnEscapedTableName' - \
	services/gateway/tables.go '	if c.Request().URL.RawPath == "" {' '	if true || c.Request().URL.RawPath == "" {'
# A SQLite statement bound with the wrong number of values is the caller's
# mistake (400), not a database failure.
m sqlite-param-count-unchecked ./services/executor/internal/sqlite/ 'TestParameterCountMismatchIsTheCallersMistake' - \
	services/executor/internal/sqlite/engine.go '	case n != len(params):' '	case false && n != len(params):'
m sqlite-named-params-unrefused ./services/executor/internal/sqlite/ 'TestParameterCountMismatchIsTheCallersMistake' - \
	services/executor/internal/sqlite/engine.go '	case named:' '	case false && named:'
# The embedded store's limit is what the operator configured.
m store-limit-ignored ./pkg/natsx/ 'TestEmbeddedStoreLimit' - \
	pkg/natsx/embedded.go 'JetStreamMaxStore: cfg.MaxStore,' 'JetStreamMaxStore: 0,'
m pg-param-count-unchecked ./services/executor/internal/postgres/ 'TestParameterCountMismatchIsTheCallersMistake' pg \
	services/executor/internal/postgres/plan.go '	if uses.Parameters != len(req.Params) {' '	if false && uses.Parameters != len(req.Params) {'
m pg-uses-parameters-unreported ./services/executor/internal/postgres/ 'TestParameterCountMismatchIsTheCallersMistake' pg \
	pkg/guard/postgres/walk.go '		w.uses.Parameters = max(w.uses.Parameters, int(x.Number))' '		_ = x'
m duckdb-param-count-unchecked ./services/executor/internal/duckdb/ 'TestParameterCountMismatchIsTheCallersMistake' - \
	services/executor/internal/duckdb/engine.go '		if n := s.NumInput(); n >= 0 && n != bound {' '		if n := s.NumInput(); false && n >= 0 && n != bound {'
