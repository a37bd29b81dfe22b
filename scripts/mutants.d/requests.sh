# Issue 19, items 4 and 5: one NATS request helper whose error says whether
# the request reached a responder, the gateway's answers that say whether a
# statement may have run, and one reader of the connection registry.
rq=pkg/natsx/request.go
reg=pkg/registry/registry.go
gq=services/gateway/query.go

# The helper's classification: only no responders is "not delivered".
m request-no-responders-delivered ./pkg/natsx/ 'TestRequestOutcomes' - \
	"$rq" 'Delivered: !errors.Is(err, nats.ErrNoResponders)' 'Delivered: true'
m request-unanswered-safe-to-retry ./pkg/natsx/ 'TestRequestOutcomes' - \
	"$rq" 'Delivered: !errors.Is(err, nats.ErrNoResponders)' 'Delivered: false'
m request-service-error-unread ./pkg/natsx/ 'TestRequestOutcomes' - \
	"$rq" 'if code := resp.Header.Get(micro.ErrorCodeHeader); code != "" {' 'if code := resp.Header.Get(micro.ErrorCodeHeader); false && code != "" {'

# The gateway says whether a read may have run: an unanswered one is 504
# EXECUTOR_UNANSWERED, one no executor received 503 (it did not run).
m gateway-unanswered-not-said ./services/gateway/ 'TestQueryTimeoutsSayWhetherTheStatementMayHaveRun' - \
	"$gq" 'case errors.Is(err, natsx.ErrUnanswered) && errors.Is(err, context.DeadlineExceeded):' 'case false:'
m gateway-undelivered-not-said ./services/gateway/ 'TestQueryTimeoutsSayWhetherTheStatementMayHaveRun' - \
	"$gq" 'case errors.Is(err, natsx.ErrNotDelivered):' 'case false:'

# The registry's one validity rule, and every reader held to it.
m registry-engineless-valid ./pkg/registry/ 'TestOneValidityRule' - \
	"$reg" 'case d.Engine == "":' 'case false:'
m registry-id-not-its-key ./pkg/registry/ 'TestOneValidityRule' - \
	"$reg" 'case d.ID != key:' 'case d.ID == "":'
m registry-start-ignores-invalid ./services/gateway/ 'TestAnInvalidRegistryEntryIsNoConnectionAnywhere' - \
	services/gateway/runs.go $'\td, err := g.descriptor(ctx, id)\n\tif err != nil {' $'\td, err := g.descriptor(ctx, id)\n\tif err != nil && !strings.Contains(err.Error(), "no readable descriptor") {'
