package orchestrator

import (
	"strings"

	"github.com/sondehq/sonde/contracts"
)

// joinCodes writes codes comma-separated, as the tests compare them.
func joinCodes(codes []contracts.Code) string {
	s := make([]string, len(codes))
	for i, c := range codes {
		s[i] = string(c)
	}
	return strings.Join(s, ",")
}
