package executor

import (
	"context"
	"os"
	"testing"

	"github.com/sondehq/sonde/contracts"
	enginespec "github.com/sondehq/sonde/pkg/engine"
	"github.com/sondehq/sonde/services/executor/connections"
)

// TestEveryEngineIsServed: the executor can open every engine the list
// (pkg/engine) declares and no engine it does not; its service name is the
// spec's; and where a database can be had here (the file engines, and
// PostgreSQL when SONDE_TEST_PG_URL names one) its guard compares names by
// the spec's rule, as the check operation reports. Every engine's guard
// reader is held to its spec in pkg/guard's TestReadersFollowTheirSpec.
func TestEveryEngineIsServed(t *testing.T) {
	for _, spec := range enginespec.All() {
		if Openers[spec.Name] == nil {
			t.Errorf("engine %s is listed but this build cannot open it", spec.Name)
		}
		if ServiceName(spec.Name) != spec.ServiceName() {
			t.Errorf("engine %s: service %q, its spec says %q", spec.Name, ServiceName(spec.Name), spec.ServiceName())
		}
	}
	for e := range Openers {
		if _, ok := enginespec.Lookup(e); !ok {
			t.Errorf("the executor opens %s, which no engine spec declares", e)
		}
	}
	conns := map[contracts.Engine]connections.Connection{
		contracts.EngineSQLite: demoConn(t),
		contracts.EngineDuckDB: {ID: "demo", Engine: contracts.EngineDuckDB, Path: duckdbFixture(t)},
	}
	if url := os.Getenv("SONDE_TEST_PG_URL"); url != "" {
		conns[contracts.EnginePostgres] = connections.Connection{ID: "demo", Engine: contracts.EnginePostgres, DSN: url}
	}
	for e, conn := range conns {
		spec, _ := enginespec.Lookup(e)
		s := newService(t, Config{Engine: e, Connections: []connections.Connection{conn}})
		r := s.Exec(context.Background(), contracts.OpCheck, read("SELECT 1 AS one"))
		if r.Status != contracts.ExecOK || r.Check == nil {
			t.Errorf("%s: the check operation answered %+v", e, r)
			continue
		}
		if r.Check.FoldCase != spec.FoldsCase() {
			t.Errorf("%s: the guard folds case %v, its spec's rule %v says %v", e, r.Check.FoldCase, spec.Names, spec.FoldsCase())
		}
	}
}
