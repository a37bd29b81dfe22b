package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/pkg/modeltest"
	"github.com/sondehq/sonde/services/gateway/api"
	"github.com/sondehq/sonde/services/sonde/internal/stacktest"
)

func TestAskExitStatusSaysWhetherTheRunAnswered(t *testing.T) {
	t.Run("answered", func(t *testing.T) {
		s := stacktest.Start(t, stacktest.Options{})
		var out bytes.Buffer
		if err := ask(context.Background(), &out, askOptions{server: s.URL, connection: "demo", workflow: "investigation"}, "Why did orders fall?"); err != nil {
			t.Fatalf("ask: %v\n%s", err, out.String())
		}
		for _, want := range []string{"DEMONSTRATION", "schema snapshot captured", "budget: turns", "Report", "cites artifact", "Verdict: answered"} {
			if !strings.Contains(out.String(), want) {
				t.Errorf("output lacks %q:\n%s", want, out.String())
			}
		}
	})
	t.Run("unanswered", func(t *testing.T) {
		s := stacktest.Start(t, stacktest.Options{Script: modeltest.ScriptFunc(func(modeltest.ChatRequest) (modeltest.Reply, error) {
			return modeltest.Reply{Text: "no idea"}, nil
		})})
		var out bytes.Buffer
		err := ask(context.Background(), &out, askOptions{server: s.URL, connection: "demo", workflow: "investigation"}, "anything")
		var ee *exitError
		if !errors.As(err, &ee) || ee.code != ExitUnanswered {
			t.Fatalf("ask: %v, want exit %d\n%s", err, ExitUnanswered, out.String())
		}
		if !strings.Contains(out.String(), "No report was composed") || !strings.Contains(out.String(), "unmet: no-report") {
			t.Errorf("output:\n%s", out.String())
		}
	})
	t.Run("unreachable", func(t *testing.T) {
		err := ask(context.Background(), &bytes.Buffer{}, askOptions{server: "http://127.0.0.1:1", connection: "demo"}, "x")
		var ee *exitError
		if !errors.As(err, &ee) || ee.code != ExitNoAnswer || !strings.Contains(err.Error(), "cannot be reached") {
			t.Fatalf("ask: %v, want exit %d", err, ExitNoAnswer)
		}
	})
	t.Run("dropped", func(t *testing.T) {
		// A gateway that starts the run and dies in the middle of the stream.
		mux := http.NewServeMux()
		mux.HandleFunc("GET "+api.PathConfig, func(w http.ResponseWriter, _ *http.Request) {
			_ = json.NewEncoder(w).Encode(api.AgentConfig{Enabled: true})
		})
		mux.HandleFunc("POST "+api.PathRuns, func(w http.ResponseWriter, _ *http.Request) {
			w.WriteHeader(http.StatusAccepted)
			_ = json.NewEncoder(w).Encode(api.StartRunResponse{RunID: "r1", Mode: contracts.ModeAgent})
		})
		mux.HandleFunc("GET "+api.StreamPath("r1"), func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", api.ContentTypeNDJSON)
			_, _ = w.Write([]byte(`{"seq":1,"kind":"run-sta`))
			w.(http.Flusher).Flush()
			panic(http.ErrAbortHandler) // the connection is cut, as when the process dies
		})
		srv := httptest.NewServer(mux)
		defer srv.Close()
		err := ask(context.Background(), &bytes.Buffer{}, askOptions{server: srv.URL, connection: "demo", workflow: "investigation"}, "x")
		var ee *exitError
		if !errors.As(err, &ee) || ee.code != ExitNoAnswer || !strings.Contains(err.Error(), "dropped the connection") {
			t.Fatalf("ask: %v, want exit %d naming the dropped connection", err, ExitNoAnswer)
		}
	})
}

func TestBindEnvPrecedence(t *testing.T) {
	t.Setenv("SONDE_HTTP", "127.0.0.1:9999")
	t.Setenv("SONDE_LOG_LEVEL", "debug")
	cmd := newServeCmd()
	if err := cmd.ParseFlags([]string{"--log-level", "warn"}); err != nil {
		t.Fatal(err)
	}
	if err := cmd.PreRunE(cmd, nil); err != nil {
		t.Fatal(err)
	}
	if v, _ := cmd.Flags().GetString("http"); v != "127.0.0.1:9999" {
		t.Errorf("--http from the environment: %q", v)
	}
	if v, _ := cmd.Flags().GetString("log-level"); v != "warn" {
		t.Errorf("a flag must win over the environment: %q", v)
	}
	t.Setenv("SONDE_NO_DEMO", "maybe")
	cmd = newServeCmd()
	if err := cmd.PreRunE(cmd, nil); err == nil || !strings.Contains(err.Error(), "SONDE_NO_DEMO") {
		t.Errorf("a bad variable: %v", err)
	}
}

func TestParseServices(t *testing.T) {
	want := strings.Join(append([]string{"gateway"}, executorNames...), ",")
	if got, err := parseServices("gateway, executors ,gateway"); err != nil || strings.Join(got, ",") != want {
		t.Errorf("parseServices: %v %v, want %s", got, err, want)
	}
	if got, err := parseServices("executor-sqlite"); err != nil || strings.Join(got, ",") != "executor-sqlite" {
		t.Errorf("parseServices: %v %v", got, err)
	}
	if _, err := parseServices("gateway,db-writer"); err == nil {
		t.Error("unknown service accepted")
	}
	if _, err := parseServices(" , "); err == nil {
		t.Error("empty list accepted")
	}
}
