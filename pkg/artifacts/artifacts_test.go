package artifacts_test

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/pkg/artifacts"
	"github.com/sondehq/sonde/pkg/natstest"
)

func newStore(t *testing.T) (*artifacts.Store, context.Context) {
	t.Helper()
	srv := natstest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	st, err := artifacts.New(ctx, srv.JetStream())
	if err != nil {
		t.Fatal(err)
	}
	return st, ctx
}

func TestPutGet(t *testing.T) {
	st, ctx := newStore(t)
	want := contracts.Artifact{
		ArtifactSummary: contracts.ArtifactSummary{
			CorrelationID: "c_0123abcd",
			Columns:       []contracts.Column{{Name: "id", Type: "INTEGER"}, {Name: "note"}},
			Rows:          2,
			Bytes:         42,
		},
		RunID:        "run-1",
		StepID:       "s1",
		ConnectionID: "shop",
		Profile:      contracts.ProfileAgentReadOnly,
		SQL:          "select id, note from t",
		Data:         [][]any{{float64(1), "a"}, {float64(2), nil}},
	}
	if err := st.Put(ctx, want); err != nil {
		t.Fatal(err)
	}
	got, err := st.Get(ctx, "run-1", "c_0123abcd")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %+v\nwant %+v", got, want)
	}

	// Run-scoped: the same correlation id under another run is not there.
	if _, err := st.Get(ctx, "run-2", "c_0123abcd"); !errors.Is(err, artifacts.ErrNotFound) {
		t.Fatalf("other run: err = %v, want ErrNotFound", err)
	}
}

func TestDirectArtifact(t *testing.T) {
	st, ctx := newStore(t)
	a := contracts.Artifact{ArtifactSummary: contracts.ArtifactSummary{CorrelationID: "c_direct"}, SQL: "select 1"}
	if err := st.Put(ctx, a); err != nil {
		t.Fatal(err)
	}
	got, err := st.Get(ctx, "", "c_direct")
	if err != nil {
		t.Fatal(err)
	}
	if got.SQL != "select 1" {
		t.Fatalf("SQL = %q", got.SQL)
	}
}

func TestNotFound(t *testing.T) {
	st, ctx := newStore(t)
	_, err := st.Get(ctx, "run-1", "c_missing")
	if !errors.Is(err, artifacts.ErrNotFound) {
		t.Fatalf("err = %v, want ErrNotFound", err)
	}
}

func TestInvalidKey(t *testing.T) {
	st, ctx := newStore(t)
	for _, tc := range []struct{ run, cid string }{
		{"run-1", ""},
		{"run-1", "a/b"},
		{"run.1", "c_1"},
		{"run-1", "c 1"},
	} {
		if _, err := st.Get(ctx, tc.run, tc.cid); !errors.Is(err, artifacts.ErrInvalidKey) {
			t.Errorf("Get(%q, %q): err = %v, want ErrInvalidKey", tc.run, tc.cid, err)
		}
		a := contracts.Artifact{RunID: tc.run, ArtifactSummary: contracts.ArtifactSummary{CorrelationID: tc.cid}}
		if err := st.Put(ctx, a); !errors.Is(err, artifacts.ErrInvalidKey) {
			t.Errorf("Put(%q, %q): err = %v, want ErrInvalidKey", tc.run, tc.cid, err)
		}
	}
}
