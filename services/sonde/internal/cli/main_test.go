package cli

import (
	"os"
	"testing"
)

// TestMain lets this test binary serve as the child process that sonde
// query and sonde sqlite run their statement in (inChild).
func TestMain(m *testing.M) {
	if os.Getenv(inspectChildEnv) == "1" {
		os.Exit(Main(os.Args[1:]))
	}
	os.Exit(m.Run())
}
