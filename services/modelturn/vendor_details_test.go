package modelturn_test

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/pkg/modeltest"
	"github.com/sondehq/sonde/services/modelturn"
)

// TestContextRefusalIsItsOwnClass: each vendor's own refusal of a prompt
// longer than the model's window — the exact body it sends — reaches the
// run as model-context-exceeded with a sentence that says so, through the
// vendor's real SDK; so does a request the server's window refuses, and a
// plain 413. A 400 that is about something else stays a refused request.
func TestContextRefusalIsItsOwnClass(t *testing.T) {
	for _, v := range vendors {
		t.Run(v.provider, func(t *testing.T) {
			t.Run("the vendor's refusal", func(t *testing.T) {
				s, _ := v.serve(t, fixed(modeltest.Reply{ContextExceeded: true}))
				assertContextExceeded(t, s.Turn(context.Background(), toolTurn()))
			})
			t.Run("over the server's window", func(t *testing.T) {
				s, srv := v.serve(t, fixed(modeltest.Reply{Text: "never"}), modeltest.WithContextWindow(100))
				req := toolTurn()
				req.Messages[1].Content = strings.Repeat("a long result ", 200)
				assertContextExceeded(t, s.Turn(context.Background(), req))
				if n := len(srv.Requests()); n != 1 {
					t.Fatalf("%d requests: a context refusal was tried again", n)
				}
				// The same server answers a request that fits.
				if reply := s.Turn(context.Background(), userTurn("r-fits")); reply.Failure != nil || reply.Text != "never" {
					t.Fatalf("a request inside the window: %+v", reply)
				}
			})
			t.Run("413", func(t *testing.T) {
				s, _ := v.serve(t, fixed(modeltest.Reply{Status: http.StatusRequestEntityTooLarge}))
				reply := s.Turn(context.Background(), toolTurn())
				if reply.Failure == nil || reply.Failure.Reason != contracts.ReasonModelContextExceeded {
					t.Fatalf("reply %+v failure %+v", reply, reply.Failure)
				}
			})
			t.Run("another 400 is not a context refusal", func(t *testing.T) {
				s, _ := v.serve(t, fixed(modeltest.Reply{Status: http.StatusBadRequest, ErrorMessage: "tools are not supported by this model"}))
				assertFailure(t, s.Turn(context.Background(), toolTurn()), contracts.ReasonModelUnavailable, false)
			})
		})
	}
	t.Run("llama.cpp's typed refusal", func(t *testing.T) {
		s, _ := vendors[0].serve(t, fixed(modeltest.Reply{Status: http.StatusBadRequest, ErrorType: "exceed_context_size_error",
			ErrorMessage: "the request exceeds the available context size, try increasing it"}))
		assertContextExceeded(t, s.Turn(context.Background(), toolTurn()))
	})
}

func assertContextExceeded(t *testing.T, reply contracts.ModelTurnReply) {
	t.Helper()
	assertFailure(t, reply, contracts.ReasonModelContextExceeded, false)
	if !strings.Contains(reply.Failure.Message, "context window") || strings.Contains(reply.Failure.Message, "LLM_") {
		t.Fatalf("the sentence %q does not say the transcript outgrew the window", reply.Failure.Message)
	}
}

// TestCutAndMalformedTurnsAreNamed: a turn cut at the output limit is
// FinishLength on every vendor (OpenAI "length", Anthropic "max_tokens",
// Gemini MAX_TOKENS, Ollama done_reason "length"), with or without a call
// begun; Gemini's MALFORMED_FUNCTION_CALL is FinishMalformedCall, with no
// text and no call.
func TestCutAndMalformedTurnsAreNamed(t *testing.T) {
	for _, v := range vendors {
		t.Run(v.provider, func(t *testing.T) {
			for name, r := range map[string]modeltest.Reply{
				"text":      {Text: "The revenue per genre is as follows: Rock 826.65, Latin 382.14, Metal", FinishReason: modeltest.FinishLength},
				"tool call": {ToolCalls: []modeltest.ToolCall{{Name: "run_read_query", Arguments: `{"sql":"SELECT 1"}`}}, FinishReason: modeltest.FinishLength},
			} {
				t.Run(name, func(t *testing.T) {
					s, _ := v.serve(t, fixed(r))
					reply := s.Turn(context.Background(), toolTurn())
					if reply.Failure != nil || reply.FinishReason != contracts.FinishLength {
						t.Fatalf("reply %+v failure %+v, want finish %q", reply, reply.Failure, contracts.FinishLength)
					}
				})
			}
		})
	}
	t.Run("gemini malformed call", func(t *testing.T) {
		s, _ := vendors[2].serve(t, fixed(modeltest.Reply{FinishReason: modeltest.FinishMalformedCall,
			ToolCalls: []modeltest.ToolCall{{Name: "run_read_query", Arguments: `{"sql": SELECT 1}`}}}))
		reply := s.Turn(context.Background(), toolTurn())
		if reply.Failure != nil || reply.FinishReason != contracts.FinishMalformedCall || len(reply.ToolCalls) != 0 || reply.Text != "" {
			t.Fatalf("reply %+v failure %+v", reply, reply.Failure)
		}
	})
}

// TestTemperatureReachesTheWire: every vendor but Anthropic is asked for
// the model's temperature — the low default, or the tuned one — and
// Anthropic, whose API version takes none, is sent none.
func TestTemperatureReachesTheWire(t *testing.T) {
	for _, v := range vendors {
		t.Run(v.provider, func(t *testing.T) {
			for _, c := range []struct {
				name, doc string
				want      float64
			}{
				{"default", "", modelturn.DefaultTemperature},
				{"tuned", `{"version":1,"models":{"m-` + v.provider + `":{"temperature":0.65}}}`, 0.65},
			} {
				t.Run(c.name, func(t *testing.T) {
					srv, err := v.start(fixed(modeltest.Reply{Text: "ok"}))
					if err != nil {
						t.Fatal(err)
					}
					t.Cleanup(func() { srv.Close() })
					cfg := modelturn.Config{Provider: v.provider, Model: "m-" + v.provider, APIKey: "k", APIURL: srv.URL()}
					if c.doc != "" {
						cfg.TuningPath = tuningDoc(t, c.doc)
					}
					if reply := newService(t, cfg).Turn(context.Background(), toolTurn()); reply.Failure != nil {
						t.Fatalf("reply %+v", reply.Failure)
					}
					got := srv.Requests()[0].Temperature
					if v.provider == modelturn.ProviderAnthropic {
						if got != nil || strings.Contains(string(srv.Requests()[0].Body), "temperature") {
							t.Fatalf("anthropic was sent a temperature: %s", srv.Requests()[0].Body)
						}
						return
					}
					if got == nil || *got < c.want-1e-6 || *got > c.want+1e-6 {
						t.Fatalf("temperature on the wire %v, want %v: %s", got, c.want, srv.Requests()[0].Body)
					}
				})
			}
		})
	}
}

// TestGeminiSignatureTravelsBackWithItsCall: the thoughtSignature Gemini
// puts on a call's part is read into the call, and a later turn that sends
// the call back carries it on the same part; the replay refuses, as Gemini
// 3 does, a history whose signed call lacks it.
func TestGeminiSignatureTravelsBackWithItsCall(t *testing.T) {
	s, srv := vendors[2].serve(t, func(req modeltest.ChatRequest) (modeltest.Reply, error) {
		if req.AssistantTurns() == 0 {
			return modeltest.Reply{ToolCalls: []modeltest.ToolCall{
				{Name: "run_read_query", Arguments: `{"sql":"SELECT 1"}`},
				{Name: "inspect_schema", Arguments: `{"table":"orders"}`},
			}}, nil
		}
		return modeltest.Reply{Text: "done"}, nil
	})
	first := s.Turn(context.Background(), userTurn("r-sig"))
	if first.Failure != nil || len(first.ToolCalls) != 2 || first.ToolCalls[0].Signature == "" || first.ToolCalls[1].Signature != "" {
		t.Fatalf("first turn %+v: want the first call signed, as Gemini signs a parallel turn", first)
	}
	next := func(calls []contracts.ModelToolCall) contracts.ModelTurnRequest {
		req := userTurn("r-sig")
		req.Messages = append(req.Messages, contracts.Message{Role: contracts.RoleAssistant, ToolCalls: calls})
		for _, c := range calls {
			req.Messages = append(req.Messages, contracts.Message{Role: contracts.RoleTool, ToolCallID: c.ID, Content: "ok"})
		}
		return req
	}
	if reply := s.Turn(context.Background(), next(first.ToolCalls)); reply.Failure != nil || reply.Text != "done" {
		t.Fatalf("the signed history was refused: %+v", reply.Failure)
	}
	sent := srv.Requests()[1].ToolCalls()
	if len(sent) != 2 || sent[0].Signature != first.ToolCalls[0].Signature {
		t.Fatalf("calls sent back %+v, want the first with signature %q", sent, first.ToolCalls[0].Signature)
	}
	stripped := append([]contracts.ModelToolCall(nil), first.ToolCalls...)
	stripped[0].Signature = ""
	if reply := s.Turn(context.Background(), next(stripped)); reply.Failure == nil {
		t.Fatal("the replay accepted a signed call sent back without its signature")
	}
	forged := append([]contracts.ModelToolCall(nil), first.ToolCalls...)
	forged[0].Signature = "Zm9yZ2Vk"
	if reply := s.Turn(context.Background(), next(forged)); reply.Failure == nil {
		t.Fatal("the replay accepted a signature it never issued")
	}
}

func tuningDoc(t *testing.T, doc string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "tuning.json")
	if err := os.WriteFile(p, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestConsecutiveUserMessagesStayApart: Anthropic and Gemini take two user
// messages in a row as one message of two blocks (parts); every replay
// hands a script back the messages the orchestrator sent, so one script
// reads the objective and the context message the same way on any vendor.
func TestConsecutiveUserMessagesStayApart(t *testing.T) {
	for _, v := range vendors {
		t.Run(v.provider, func(t *testing.T) {
			s, srv := v.serve(t, fixed(modeltest.Reply{Text: "ok"}))
			req := toolTurn()
			req.Messages = append(req.Messages[:2:2], append([]contracts.Message{{Role: contracts.RoleUser, Content: "The context."}}, req.Messages[2:]...)...)
			req.Messages = append(req.Messages, contracts.Message{Role: contracts.RoleUser, Content: "A notice."})
			if reply := s.Turn(context.Background(), req); reply.Failure != nil {
				t.Fatalf("reply %+v", reply.Failure)
			}
			var got []string
			for _, m := range srv.Requests()[0].Messages {
				got = append(got, m.Role+":"+m.Content)
			}
			want := "system:You investigate read-only.|user:Why did orders dip?|user:The context.|assistant:|tool:{\"rows\":[[1]]}|user:A notice."
			if strings.Join(got, "|") != want {
				t.Fatalf("messages\n%s\nwant\n%s", strings.Join(got, "|"), want)
			}
		})
	}
}
