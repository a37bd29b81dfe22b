package executor

import (
	"context"

	"github.com/sondehq/sonde/services/executor/internal/engine"
)

// readBlocker is implemented by engines that can tell, once a connection
// is open, what in its database refuses every read (or every read of a
// common kind) whatever the statement says — for PostgreSQL a user-defined
// implicit cast or btree/hash operator class, which the check of a
// statement's resolved objects refuses every read through, or a pinned
// setting the session does not show. Each reason is in words that name no
// host, port, role, database or path.
type readBlocker interface {
	ReadBlockers(ctx context.Context) ([]string, error)
}

// connectionWarnings checks what the operator should fix about the
// connection id, just opened on eng, and returns it for the descriptor's
// warnings, the details going to the log: a read role that can write
// (engine.PrivilegeChecker), large_tables entries that name no table or a
// column their table lacks (largeTableWarnings), and what refuses every
// read (readBlocker). A check that cannot be made is a warning too.
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
	if b, ok := eng.(readBlocker); ok {
		blockers, err := b.ReadBlockers(ctx)
		if err != nil {
			s.log.Warn("cannot check the database for what refuses every read", "connection", id, "err", driverText(err))
			blockers = append(blockers, "the executor could not check the database for what refuses every read; see its log")
		}
		if len(blockers) > 0 {
			s.log.Warn("the connection's database holds what refuses every read", "connection", id, "warnings", blockers)
		}
		warnings = append(warnings, blockers...)
	}
	return warnings
}
