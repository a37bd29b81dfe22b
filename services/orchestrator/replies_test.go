package orchestrator

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/pkg/exectext"
)

// TestExecutorRepliesAsTheModelReadsThem renders what an executor answered
// on the demo database (testdata/visible/replies.json, the executor's
// TestGolden data: a read, a schema read, a database error, a refusal) as
// the orchestrator renders it for the model, against
// testdata/visible/replies.golden: the text the executor wrote before the
// orchestrator became its one renderer, byte for byte.
func TestExecutorRepliesAsTheModelReadsThem(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(visibleDir, "replies.json"))
	if err != nil {
		t.Fatal(err)
	}
	var cases []struct {
		Op    contracts.ExecOp      `json:"op"`
		Req   contracts.ExecRequest `json:"req"`
		Reply contracts.ExecReply   `json:"reply"`
	}
	if err := json.Unmarshal(b, &cases); err != nil || len(cases) != 4 {
		t.Fatalf("%d cases: %v", len(cases), err)
	}
	var got strings.Builder
	for _, c := range cases {
		got.WriteString("=== " + string(c.Op) + " " + string(c.Reply.Status) + "\n")
		got.WriteString(exectext.Render(c.Op, c.Req, c.Reply))
		got.WriteString("\n")
	}
	golden(t, "replies.golden", got.String())
}
