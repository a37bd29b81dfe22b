package executor

import (
	"time"

	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/services/executor/internal/rowset"
)

// The inspect profile's bounds, which the direct-inspection surfaces (the
// CLI's query and sqlite commands, POST /api/query) check their flags against.
const (
	InspectRows       = 200
	InspectMaxRows    = 1000
	InspectTimeout    = 5 * time.Second
	InspectMaxTimeout = 10 * time.Second
)

// profile is how a read runs under one contracts.Profile.
type profile struct {
	// rows and bytes are the bounds used when the request asks for none, and
	// the most it may ask for.
	rows, maxRows   int
	bytes, maxBytes int
	// truncate keeps what fits; otherwise passing a bound refuses the result.
	truncate bool
	// timeout is used when the request grants none; maxTimeout caps a grant.
	timeout, maxTimeout time.Duration
}

// The profiles a statement may run under; agent-operations runs curated
// readings only (OpOperations), never a statement.
var profiles = map[contracts.Profile]profile{
	// A run's reads: bounded results, refused rather than truncated so the
	// model never reasons over a silently partial result.
	contracts.ProfileAgentReadOnly: {
		rows: 200, maxRows: 200, bytes: 256 << 10, maxBytes: 256 << 10,
		timeout: 10 * time.Second, maxTimeout: 10 * time.Second,
	},
	// The editor's replay of a run's statement: more rows and bytes, still
	// refused rather than truncated, and no statement timeout of its own
	// (zero: the engine sets none; the read-only session still holds), as the
	// architecture's profile says (500 rows, no time limit, same read-only
	// session). The bytes are lowered to the operation's memory; the table in
	// docs/executor-sqlite.md states these figures (TestHandoverProfile).
	contracts.ProfileAgentHandover: {
		rows: 500, maxRows: 500, bytes: 64 << 20, maxBytes: 64 << 20,
	},
	// An operations run's curated readings (OpOperations only): a reading
	// is refused rather than cut short (reading_over_budget).
	contracts.ProfileAgentOperations: {
		rows: contracts.MaxOperationsRows, maxRows: contracts.MaxOperationsRows, bytes: 256 << 10, maxBytes: 256 << 10,
		timeout: 10 * time.Second, maxTimeout: 10 * time.Second,
	},
	// Direct reads from the CLI, MCP and HTTP: truncated with truncatedBy.
	contracts.ProfileInspect: {
		rows: InspectRows, maxRows: InspectMaxRows, bytes: 1 << 20, maxBytes: 1 << 20, truncate: true,
		timeout: InspectTimeout, maxTimeout: InspectMaxTimeout,
	},
}

// limits resolves the request's bounds against the profile: zero means the
// profile's default, more than the profile allows is lowered to it.
func (p profile) limits(req contracts.ExecRequest) rowset.Limits {
	pick := func(asked, def, most int) int {
		switch {
		case asked <= 0:
			return def
		case asked > most:
			return most
		}
		return asked
	}
	return rowset.Limits{
		MaxRows:  pick(req.MaxRows, p.rows, p.maxRows),
		MaxBytes: pick(req.MaxBytes, p.bytes, p.maxBytes),
		Truncate: p.truncate,
	}
}

// deadline resolves the statement timeout the request was granted.
func (p profile) deadline(req contracts.ExecRequest) time.Duration {
	t := time.Duration(req.TimeoutMs) * time.Millisecond
	switch {
	case t <= 0:
		return p.timeout
	case t > p.maxTimeout:
		return p.maxTimeout
	}
	return t
}
