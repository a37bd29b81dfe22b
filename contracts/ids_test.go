package contracts_test

import (
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/sondehq/sonde/contracts"
)

// hostileIDs are values that must never reach a subject or a key: each one
// either breaks the subject's tokens, matches more than itself, or makes the
// protocol line long enough for the NATS server to close the connection.
var hostileIDs = map[string]string{
	"empty":          "",
	"4 KB":           strings.Repeat("a", 4096),
	"one too long":   strings.Repeat("a", contracts.MaxIDLength+1),
	"dot":            "shop.orders",
	"star":           "*",
	"gt":             ">",
	"space":          "shop orders",
	"tab":            "shop\torders",
	"NUL":            "shop\x00",
	"CR LF":          "shop\r\nPUB x 1",
	"unicode":        "café",
	"fullwidth dot":  "shop\uff0eorders",
	"slash":          "shop/orders",
	"equals":         "shop=orders",
	"dollar":         "$JS",
	"percent":        "shop%2e",
	"invalid UTF-8":  "shop\xff",
	"trailing space": "shop ",
}

func TestCheckIDRefusesEveryHostileShape(t *testing.T) {
	for name, v := range hostileIDs {
		err := contracts.CheckID(contracts.IDConnection, v)
		var ie *contracts.IDError
		if !errors.As(err, &ie) {
			t.Errorf("%s: err = %v, want *IDError", name, err)
			continue
		}
		if ie.Kind != contracts.IDConnection || ie.Code() != contracts.CodeInvalidID || ie.Reason == "" || ie.Fix() == "" {
			t.Errorf("%s: incomplete error %+v", name, ie)
		}
		if msg := err.Error(); len(msg) > 200 || !utf8.ValidString(msg) || strings.ContainsAny(msg, "\x00\r\n") {
			t.Errorf("%s: the message repeats the value raw: %q", name, msg)
		}
		if e := ie.AsError(); e.Code != contracts.CodeInvalidID || e.Message == "" || e.Fix == "" {
			t.Errorf("%s: AsError = %+v", name, e)
		}
		if contracts.ValidRunID(v) {
			t.Errorf("%s: ValidRunID accepts what CheckID refuses", name)
		}
	}
}

func TestCheckIDAcceptsIDs(t *testing.T) {
	for _, v := range []string{"shop", "demo", "a", "r01jz8x5k3m9q2w7e4t6y1u0i8o", "k" + strings.Repeat("b", 26), "my_db-2", strings.Repeat("Z", contracts.MaxIDLength)} {
		if err := contracts.CheckID(contracts.IDRun, v); err != nil {
			t.Errorf("%q: %v", v, err)
		}
		if !contracts.ValidRunID(v) {
			t.Errorf("%q: ValidRunID refuses what CheckID accepts", v)
		}
	}
}

// FuzzCheckID: whatever CheckID accepts is one subject token, free of
// wildcards, short enough for any subject built of a few of them.
func FuzzCheckID(f *testing.F) {
	for _, v := range hostileIDs {
		f.Add(v)
	}
	f.Add("shop")
	f.Fuzz(func(t *testing.T, v string) {
		if contracts.CheckID(contracts.IDConnection, v) != nil {
			return
		}
		if v == "" || len(v) > contracts.MaxIDLength || strings.ContainsAny(v, ".*> \t\r\n\x00") {
			t.Fatalf("accepted %q", v)
		}
		for _, r := range v {
			if r >= utf8.RuneSelf {
				t.Fatalf("accepted non-ASCII %q", v)
			}
		}
		if got := contracts.RunIDFromLedgerSubject(contracts.LedgerSubject(v)); got != v {
			t.Fatalf("ledger subject of %q reads back %q", v, got)
		}
	})
}
