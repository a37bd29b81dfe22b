package client

import (
	"context"
	"net/http"

	"github.com/sondehq/sonde/services/gateway/api"
)

// Query runs one guarded read under the inspect profile. A refusal is an
// *APIError with status 422 and the guard's code; a database error one with
// status 502 or 504 and code api.DBErrorCode(class).
func (c *Client) Query(ctx context.Context, req api.QueryRequest) (api.QueryResponse, error) {
	var out api.QueryResponse
	return out, c.do(ctx, http.MethodPost, api.PathQuery, req, &out)
}
