// Package client is a typed Go client of Sonde's HTTP API, for the CLI and
// for tests. Every answer other than 2xx is returned as an *APIError.
package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/services/gateway/api"
)

// The bodies of the API, shared with the gateway's handlers.
type (
	// AgentConfig answers Config.
	AgentConfig = api.AgentConfig
	// StartRunRequest is what StartRun sends.
	StartRunRequest = api.StartRunRequest
	// StartRunResponse answers StartRun.
	StartRunResponse = api.StartRunResponse
	// RunList answers Runs.
	RunList = api.RunList
	// RunSummary is one run of a RunList.
	RunSummary = api.RunSummary
)

// Client calls one gateway. It is safe for concurrent use.
type Client struct {
	base  string
	token string
	hc    *http.Client
}

// Option configures a Client.
type Option func(*Client)

// WithHTTPClient sends requests through hc instead of http.DefaultClient. A
// timeout on hc also bounds Stream, which lasts as long as the run.
func WithHTTPClient(hc *http.Client) Option { return func(c *Client) { c.hc = hc } }

// New returns a client of the gateway at baseURL ("http://127.0.0.1:8080"),
// authenticating with token (empty: no Authorization header, for a local
// gateway without tokens).
func New(baseURL, token string, opts ...Option) *Client {
	c := &Client{base: strings.TrimRight(baseURL, "/"), token: token, hc: http.DefaultClient}
	for _, o := range opts {
		o(c)
	}
	return c
}

// APIError is a non-2xx answer of the gateway.
type APIError struct {
	// Status is the HTTP status code.
	Status int
	// Code is the stable error code, one of contracts.Codes (contracts.CodeHTTPStatus
	// for an answer that was not the API's error shape).
	Code    contracts.Code
	Message string
	Fix     string
}

func (e *APIError) Error() string {
	s := fmt.Sprintf("sonde api: %d %s: %s", e.Status, e.Code, e.Message)
	if e.Fix != "" {
		s += " (" + e.Fix + ")"
	}
	return s
}

// Config asks whether the server runs agents.
func (c *Client) Config(ctx context.Context) (AgentConfig, error) {
	var out AgentConfig
	return out, c.do(ctx, http.MethodGet, api.PathConfig, nil, &out)
}

// StartRun opens a run and returns its id and the persisted mode and workflow.
func (c *Client) StartRun(ctx context.Context, req StartRunRequest) (StartRunResponse, error) {
	var out StartRunResponse
	return out, c.do(ctx, http.MethodPost, api.PathRuns, req, &out)
}

// Runs returns one page of the caller's runs, the most recently started
// first, running ones included: limit runs (0: the server's default of 20,
// at most 100) after cursor ("" for the first page; then the previous page's
// Next, which is "" on the last page).
func (c *Client) Runs(ctx context.Context, limit int, cursor string) (RunList, error) {
	var out RunList
	return out, c.do(ctx, http.MethodGet, api.RunsPath(limit, cursor), nil, &out)
}

// Run returns a run's record, folded from its ledger.
func (c *Client) Run(ctx context.Context, id string) (contracts.Record, error) {
	var out contracts.Record
	return out, c.do(ctx, http.MethodGet, api.RunPath(id), nil, &out)
}

// Cancel asks a run to stop and returns its status once the request is
// recorded; the run stops at its next checkpoint.
func (c *Client) Cancel(ctx context.Context, id string) (contracts.RunStatus, error) {
	var out api.CancelResponse
	err := c.do(ctx, http.MethodDelete, api.RunPath(id), nil, &out)
	return out.Status, err
}

// Artifact returns one stored result of a run.
func (c *Client) Artifact(ctx context.Context, runID, correlationID string) (contracts.Artifact, error) {
	var out contracts.Artifact
	return out, c.do(ctx, http.MethodGet, api.ArtifactPath(runID, correlationID), nil, &out)
}

// Connections lists the connections runs can name, sorted by id.
func (c *Client) Connections(ctx context.Context) ([]contracts.ConnectionDescriptor, error) {
	var out api.Connections
	return out.Connections, c.do(ctx, http.MethodGet, api.PathConnections, nil, &out)
}

// Stream calls fn with each entry of a run's ledger after position from (0:
// from the first), live as they are appended, until the server ends the
// stream (after run-finished), fn returns an error (returned as is), or ctx
// ends. Resume an interrupted stream with the Seq of the last entry seen.
func (c *Client) Stream(ctx context.Context, id string, from uint64, fn func(contracts.Entry) error) error {
	path := api.StreamPath(id)
	if from > 0 {
		path += "?from=" + strconv.FormatUint(from, 10)
	}
	resp, err := c.send(ctx, http.MethodGet, path, nil, api.ContentTypeNDJSON)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	dec := json.NewDecoder(resp.Body)
	for {
		var e contracts.Entry
		err := dec.Decode(&e)
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return fmt.Errorf("sonde api: stream %s: %w", id, err)
		}
		if err := fn(e); err != nil {
			return err
		}
	}
}

// do sends a request with an optional JSON body and decodes a 2xx answer
// into out.
func (c *Client) do(ctx context.Context, method, path string, body, out any) error {
	resp, err := c.send(ctx, method, path, body, "application/json")
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		return fmt.Errorf("sonde api: %s %s: decode answer: %w", method, path, err)
	}
	return nil
}

// send performs a request and returns a 2xx response; any other status is
// decoded into an *APIError and the body closed.
func (c *Client) send(ctx context.Context, method, path string, body any, accept string) (*http.Response, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, fmt.Errorf("sonde api: encode %s %s: %w", method, path, err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return nil, fmt.Errorf("sonde api: %s %s: %w", method, path, err)
	}
	req.Header.Set("Accept", accept)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("sonde api: %s %s: %w", method, path, err)
	}
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		return resp, nil
	}
	defer resp.Body.Close()
	return nil, decodeError(resp)
}

// decodeError reads a non-2xx answer. A body that is not the API's error
// shape (a proxy's page, say) still yields an *APIError with its status.
func decodeError(resp *http.Response) error {
	e := &APIError{Status: resp.StatusCode}
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	var body api.ErrorBody
	if json.Unmarshal(raw, &body) == nil && body.Error.Code != "" {
		e.Code, e.Message, e.Fix = body.Error.Code, body.Error.Message, body.Error.Fix
		return e
	}
	e.Code = contracts.CodeHTTPStatus
	e.Message = strings.TrimSpace(string(raw))
	if e.Message == "" {
		e.Message = http.StatusText(resp.StatusCode)
	}
	return e
}
