package client_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/services/gateway/api"
	"github.com/sondehq/sonde/services/gateway/client"
)

func TestErrorsAndHeaders(t *testing.T) {
	var gotAuth, gotAccept string
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+api.PathConfig, func(w http.ResponseWriter, r *http.Request) {
		gotAuth, gotAccept = r.Header.Get("Authorization"), r.Header.Get("Accept")
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = w.Write([]byte(`{"error":{"code":"unauthorized","message":"a valid API token is required","fix":"send a token"}}`))
	})
	mux.HandleFunc("GET "+api.PathConnections, func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "bad gateway from a proxy", http.StatusBadGateway)
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	c := client.New(srv.URL+"/", "s3cret")

	_, err := c.Config(context.Background())
	var ae *client.APIError
	if !errors.As(err, &ae) || ae.Status != 401 || ae.Code != contracts.CodeUnauthorized || ae.Fix != "send a token" {
		t.Fatalf("err = %#v", err)
	}
	if gotAuth != "Bearer s3cret" || gotAccept != "application/json" {
		t.Fatalf("headers: %q %q", gotAuth, gotAccept)
	}

	// An answer that is not the API's shape still becomes an *APIError.
	_, err = c.Connections(context.Background())
	if !errors.As(err, &ae) || ae.Status != http.StatusBadGateway || ae.Code != contracts.CodeHTTPStatus || ae.Message != "bad gateway from a proxy" {
		t.Fatalf("err = %#v", err)
	}
}

func TestPathsEscapeIDs(t *testing.T) {
	if got := api.ArtifactPath("r 1", "c/2"); got != "/api/agent/runs/r%201/artifacts/c%2F2" {
		t.Fatalf("got %s", got)
	}
}

func TestRunsPathLeavesDefaultsOut(t *testing.T) {
	for _, tc := range []struct {
		limit  int
		cursor string
		want   string
	}{
		{0, "", "/api/agent/runs"},
		{5, "", "/api/agent/runs?limit=5"},
		{0, "41", "/api/agent/runs?cursor=41"},
		{5, "4 1", "/api/agent/runs?cursor=4+1&limit=5"},
	} {
		if got := api.RunsPath(tc.limit, tc.cursor); got != tc.want {
			t.Errorf("RunsPath(%d, %q) = %s, want %s", tc.limit, tc.cursor, got, tc.want)
		}
	}
}
