package engine

import (
	"errors"
	"strings"
	"testing"

	"github.com/sondehq/sonde/contracts"
)

func TestNamesAny(t *testing.T) {
	hidden := map[string]bool{"salaries": true, "odd name": true, "x\"y": true}
	for text, want := range map[string]bool{
		"SELECT * FROM salaries":                     true,
		"select * from public.SALARIES s":            true,
		`SELECT * FROM "Salaries"`:                   true,
		"SELECT * FROM [dbo].[salaries]":             true,
		"SELECT * FROM `salaries`":                   true,
		`SELECT * FROM "odd name"`:                   true,
		`SELECT * FROM "x""y"`:                       true,
		"SELECT 'salaries' AS label":                 true, // a literal counts: err toward hiding
		"SELECT * FROM salaries_archive":             false,
		"SELECT * FROM orders WHERE note = 'salary'": false,
		"": false,
	} {
		if got := NamesAny(text, hidden); got != want {
			t.Errorf("NamesAny(%q) = %v, want %v", text, got, want)
		}
	}
	if NamesAny("SELECT * FROM salaries", nil) {
		t.Error("no hidden names, yet found one")
	}
}

func TestUnsupported(t *testing.T) {
	var err error = Unsupported(contracts.OpsSessions, "no sessions here", contracts.OpsHealth, contracts.OpsStorage)
	var ku *KindUnsupportedError
	if !errors.As(err, &ku) || ku.Kind != contracts.OpsSessions || !strings.HasSuffix(ku.Fix, "health, storage") {
		t.Errorf("%+v", ku)
	}
}
