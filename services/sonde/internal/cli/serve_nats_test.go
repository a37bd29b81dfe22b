package cli

import (
	"path/filepath"
	"strings"
	"testing"
)

func TestCheckNATSAuth(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "absent.creds")
	ext := "nats://127.0.0.1:4222"
	for _, tc := range []struct {
		name string
		o    serveOptions
		none bool
		want string // "" accepts
	}{
		{"embedded plain", serveOptions{}, false, ""},
		{"user on embedded", serveOptions{natsUser: "gateway", natsPass: "pw"}, false, "--nats-user applies to an external"},
		{"admin on embedded", serveOptions{natsAdmin: true}, true, "--nats-admin applies to an external"},
		{"user and password", serveOptions{natsURL: ext, natsUser: "gateway", natsPass: "pw"}, false, ""},
		{"user without password", serveOptions{natsURL: ext, natsUser: "gateway"}, false, "SONDE_NATS_PASSWORD"},
		{"password without user", serveOptions{natsURL: ext, natsPass: "pw"}, false, "needs --nats-user"},
		{"creds and user", serveOptions{natsURL: ext, natsCreds: missing, natsUser: "gateway", natsPass: "pw"}, false, "give one"},
		{"creds missing", serveOptions{natsURL: ext, natsCreds: missing}, false, "--nats-creds"},
		{"none without admin", serveOptions{natsURL: ext}, true, "needs --nats-admin"},
		{"none as admin", serveOptions{natsURL: ext, natsUser: "admin", natsPass: "pw", natsAdmin: true}, true, ""},
	} {
		err := checkNATSAuth(tc.o, tc.none)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: got %v, want an error with %q", tc.name, err, tc.want)
		case err != nil && strings.Contains(err.Error(), "pw"):
			t.Errorf("%s: the error shows the password: %v", tc.name, err)
		}
	}
	if got, err := parseServices("none"); err != nil || got == nil || len(got) != 0 {
		t.Fatalf("parseServices(none) = %v, %v", got, err)
	}
}
