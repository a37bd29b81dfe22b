package client

import (
	"context"
	"net/http"

	"github.com/sondehq/sonde/services/gateway/api"
)

// Query runs one guarded read under the inspect profile. A refusal is an
// *APIError with status 422 and the guard's code, or 503 with code
// executor_busy or connection_unavailable when the same request may succeed
// later; a database error one with status 502 or 504 and code
// contracts.DBErrorClass.Code. Cancelling ctx stops the statement at the
// database, not only the wait for it.
func (c *Client) Query(ctx context.Context, req api.QueryRequest) (api.QueryResponse, error) {
	var out api.QueryResponse
	return out, c.do(ctx, http.MethodPost, api.PathQuery, req, &out)
}
