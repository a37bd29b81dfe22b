package client

import (
	"context"
	"net/http"

	"github.com/sondehq/sonde/services/gateway/api"
)

// Handover replays the auto-executed answer of run id in the editor's
// place: the statement the run's ledger recorded, on the run's connection,
// under the agent-handover profile (read-only, at most 500 rows, refused
// rather than truncated, no statement timeout). Nothing but the run id is
// sent. An answer that was not auto-executed is an *APIError with status 409
// and code api.CodeNotAutoExecuted (the message carries the gate's warning);
// a run without an answer 409 api.CodeNoAnswer; a refusal and a database
// error as Query has them. Cancelling ctx stops the statement at the
// database.
func (c *Client) Handover(ctx context.Context, id string) (api.HandoverResponse, error) {
	var out api.HandoverResponse
	return out, c.do(ctx, http.MethodPost, api.HandoverPath(id), nil, &out)
}
