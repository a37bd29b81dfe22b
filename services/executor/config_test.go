package executor

import (
	"errors"
	"strings"
	"testing"

	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/services/executor/connections"
)

// TestNewRefusesAnInvalidConnectionID: a connection id that breaks the one
// id rule (contracts.CheckID) — one of 4 KB, a subject separator, a
// wildcard — stops the executor at New with an error saying which rule,
// never a subject that would close its NATS connection later; the error
// does not repeat the id whole.
func TestNewRefusesAnInvalidConnectionID(t *testing.T) {
	for _, id := range []string{strings.Repeat("x", 4096), "shop.eu", "shop>", "shop*", "shop eu", "ш"} {
		_, err := New(Config{Connections: []connections.Connection{{ID: id, Engine: contracts.EngineSQLite, Path: demoPath(t)}}})
		var idErr *contracts.IDError
		if !errors.As(err, &idErr) || idErr.Kind != contracts.IDConnection {
			t.Errorf("id %.40q: %v", id, err)
			continue
		}
		if len(err.Error()) > 200 {
			t.Errorf("id %.40q: an error of %d bytes", id, len(err.Error()))
		}
	}
}
