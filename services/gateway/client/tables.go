package client

import (
	"context"
	"net/http"
	"net/url"

	"github.com/sondehq/sonde/services/gateway/api"
)

// Tables returns one page of connection connID's readable relations whose
// name matches pattern ('*' any run, '?' one character, case-insensitive;
// "" for all), continuing after the relation named by after (the previous
// page's Next; "" for the first page). Relations the readable patterns hide
// are counted in Unreadable, never named. A connection that does not exist
// is an *APIError with code contracts.CodeUnknownConnection.
func (c *Client) Tables(ctx context.Context, connID, pattern, after string) (api.TablesResponse, error) {
	var out api.TablesResponse
	path := api.TablesPath(connID)
	q := url.Values{}
	if pattern != "" {
		q.Set("pattern", pattern)
	}
	if after != "" {
		q.Set("after", after)
	}
	if len(q) > 0 {
		path += "?" + q.Encode()
	}
	return out, c.do(ctx, http.MethodGet, path, nil, &out)
}

// DescribeTable describes one readable relation of connection connID in
// full, named as name or schema.name. An unknown or unreadable one is an
// *APIError with status 404 and code api.CodeTableNotFound; a name found in
// several schemas one with status 409 and code api.CodeAmbiguousTable.
func (c *Client) DescribeTable(ctx context.Context, connID, table string) (api.DescribeResponse, error) {
	var out api.DescribeResponse
	return out, c.do(ctx, http.MethodGet, api.TablePath(connID, table), nil, &out)
}

// Explain returns the estimating plan of a statement under the inspect
// profile; the statement is guarded exactly like a read and never run. A
// refusal is an *APIError as Query returns it.
func (c *Client) Explain(ctx context.Context, req api.ExplainRequest) (api.ExplainResponse, error) {
	var out api.ExplainResponse
	return out, c.do(ctx, http.MethodPost, api.PathExplain, req, &out)
}
