package cli

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
)

func TestProbeCommandPrintsTheDemoVerdict(t *testing.T) {
	t.Setenv("LLM_PROVIDER", "demo")
	var out, logs bytes.Buffer
	if err := probe(context.Background(), &out, &logs, false); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	for _, want := range []string{"DEMONSTRATION", "can drive an agent run", "toolCalling, structuredOutput, streaming"} {
		if !strings.Contains(out.String(), want) {
			t.Fatalf("output lacks %q:\n%s", want, out.String())
		}
	}
}

func TestProbeCommandWithoutAModelReachesNoVerdict(t *testing.T) {
	t.Setenv("LLM_PROVIDER", "")
	var out, logs bytes.Buffer
	err := probe(context.Background(), &out, &logs, false)
	var ee *exitError
	if !errors.As(err, &ee) || ee.code != ExitError || !strings.Contains(out.String(), "model-unavailable") {
		t.Fatalf("err %v\n%s", err, out.String())
	}
}
