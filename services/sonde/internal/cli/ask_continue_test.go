package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"

	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/services/sonde/internal/stacktest"
)

// `sonde ask --continue RUN` sends previousRunId: the new run's record shows
// it continuing the earlier run's conversation, carrying its objective.
func TestAskContinueCarriesTheConversation(t *testing.T) {
	s := stacktest.Start(t, stacktest.Options{})
	record := func(o askOptions, objective string) contracts.Record {
		t.Helper()
		var out bytes.Buffer
		o.server, o.connection, o.workflow, o.jsonOut = s.URL, "demo", "investigation", true
		_ = ask(context.Background(), &out, o, objective) // answered or not, the record is printed
		var rec contracts.Record
		if err := json.Unmarshal(out.Bytes(), &rec); err != nil {
			t.Fatalf("record: %v\n%s", err, out.String())
		}
		return rec
	}
	first := record(askOptions{}, "Why did orders fall?")
	second := record(askOptions{continues: first.RunID}, "Which customers were those?")
	th := second.Thread
	if second.PreviousRunID != first.RunID || th == nil || th.Declined != "" || th.RootRunID != first.RunID || th.Position != 2 ||
		len(th.Chain) != 1 || th.Chain[0].Objective != "Why did orders fall?" {
		t.Fatalf("second run's thread %+v (previous %q)", th, second.PreviousRunID)
	}
}
