package wire

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

// TestAdapterSendsOnlyTheConfiguredCredential: whatever credential headers a
// request carries when it reaches the adapter's client (an SDK that read
// the environment, say), the server sees the configured one alone.
func TestAdapterSendsOnlyTheConfiguredCredential(t *testing.T) {
	seen := make(chan http.Header, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen <- r.Header.Clone()
	}))
	defer srv.Close()
	a, err := NewAdapter("test", "m", srv.URL, "", Credential{Header: "X-Api-Key", Value: "configured", Strip: []string{"X-Api-Key", "Authorization"}}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequest(http.MethodGet, a.BaseURL.String(), nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer ambient")
	req.Header.Set("X-Api-Key", "ambient")
	res, err := a.HTTP.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	h := <-seen
	if got := h.Values("X-Api-Key"); len(got) != 1 || got[0] != "configured" {
		t.Fatalf("X-Api-Key %q, want only the configured key", got)
	}
	if got := h.Get("Authorization"); got != "" {
		t.Fatalf("Authorization %q reached the server", got)
	}
	if _, err := NewAdapter("test", "", srv.URL, "", Credential{}, nil, nil); err == nil {
		t.Fatal("an adapter without a model was built")
	}
}
