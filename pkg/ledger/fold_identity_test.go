package ledger

import (
	"testing"
	"time"

	"github.com/sondehq/sonde/contracts"
)

// The record carries the identity of the database the run's connection
// reached when it started (what a replay of its answer is checked
// against); a header without one folds to none.
func TestFoldConnectionIdentity(t *testing.T) {
	for _, id := range []string{"9c1f", ""} {
		e, err := contracts.NewEntry("r", contracts.KindRunStarted, time.Unix(0, 0),
			contracts.RunStarted{Mode: contracts.ModeAgent, ConnectionID: "shop", ConnectionIdentity: id})
		if err != nil {
			t.Fatal(err)
		}
		if r := Fold("r", []contracts.Entry{e}); r.ConnectionID != "shop" || r.ConnectionIdentity != id {
			t.Errorf("header identity %q: record %q %q", id, r.ConnectionID, r.ConnectionIdentity)
		}
	}
}
