package executor

import (
	"context"

	"github.com/sondehq/sonde/services/executor/internal/engine"
)

// connectionWarner is implemented by engines that can tell, once a
// connection is open, what about its database will refuse or mislead reads
// — for PostgreSQL, an implicit cast to or from a user type that the
// catalog check refuses every read through. Each warning is in words that
// name no host, port, role, database or path.
type connectionWarner interface {
	ConnectionWarnings(ctx context.Context) ([]string, error)
}

// connectionWarnings checks what the operator should fix about the
// connection id, just opened on eng, and returns it for the descriptor's
// warnings, the details going to the log: a read role that can write
// (engine.PrivilegeChecker), large_tables entries that name no table or a
// column their table lacks (largeTableWarnings), and what the engine itself
// warns of (connectionWarner). A check that cannot be made is a warning too.
func (s *Service) connectionWarnings(ctx context.Context, id string, eng engine.Engine) []string {
	var warnings []string
	if pc, ok := eng.(engine.PrivilegeChecker); ok {
		reasons, err := pc.WriteCapable(ctx)
		switch {
		case err != nil:
			s.log.Warn("cannot check whether the read role can write", "connection", id, "err", driverText(err))
			warnings = append(warnings, "the executor could not check whether the role that runs reads can write; see its log")
		case len(reasons) > 0:
			for _, r := range reasons {
				warnings = append(warnings, "the role that runs reads can write: "+r+
					"; give the connection a least-privilege role (docs/security.md)")
			}
			s.log.Warn("the role that runs reads can write; give the connection a least-privilege role (docs/security.md)",
				"connection", id, "reasons", reasons)
		}
	}
	large, err := largeTableWarnings(ctx, eng)
	if err != nil {
		s.log.Warn("cannot check large_tables against the catalog", "connection", id, "err", driverText(err))
		large = append(large, "the executor could not check the connection's large_tables against its catalog; see its log")
	}
	if len(large) > 0 {
		s.log.Warn("large_tables does not match the catalog", "connection", id, "warnings", large)
	}
	warnings = append(warnings, large...)
	if w, ok := eng.(connectionWarner); ok {
		more, err := w.ConnectionWarnings(ctx)
		if err != nil {
			s.log.Warn("cannot check the connection's database for what refuses reads", "connection", id, "err", driverText(err))
			more = append(more, "the executor could not check the database for objects that refuse every read; see its log")
		}
		if len(more) > 0 {
			s.log.Warn("the connection's database holds what refuses reads", "connection", id, "warnings", more)
		}
		warnings = append(warnings, more...)
	}
	return warnings
}
