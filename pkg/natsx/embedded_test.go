package natsx_test

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/sondehq/sonde/pkg/natsx"
)

// TestEmbeddedUsers: with users, a client on the TCP listener
// authenticates (the in-process one too, with the same option); the no-auth
// user serves clients that present no credentials.
func TestEmbeddedUsers(t *testing.T) {
	pw := natsx.NewPassword()
	if len(pw) < 20 || pw == natsx.NewPassword() {
		t.Fatalf("weak or repeated password %q", pw)
	}
	e, err := natsx.StartEmbedded(natsx.EmbeddedConfig{StoreDir: t.TempDir(), Listen: "127.0.0.1:0",
		Users: []natsx.EmbeddedUser{{Name: "sonde", Password: pw}, {Name: "executor", Password: "child-pw"}}})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Shutdown(t.Context())
	url := e.ClientURL()
	if !strings.HasPrefix(url, "nats://127.0.0.1:") || e.LoopbackURL() != url {
		t.Fatalf("client URL %q", url)
	}
	quiet := nats.ErrorHandler(func(*nats.Conn, *nats.Subscription, error) {})
	nc, err := e.Connect("parent", nats.UserInfo("sonde", pw))
	if err != nil {
		t.Fatal(err)
	}
	nc.Close()
	for _, tc := range []struct {
		user, pw string
		ok       bool
	}{{"executor", "child-pw", true}, {"executor", "wrong", false}, {"", "", false}} {
		opts := []nats.Option{quiet, nats.MaxReconnects(0)}
		if tc.user != "" {
			opts = append(opts, nats.UserInfo(tc.user, tc.pw))
		}
		nc, err := nats.Connect(url, opts...)
		if (err == nil) != tc.ok {
			t.Errorf("TCP as %q/%q: %v", tc.user, tc.pw, err)
		}
		if err == nil {
			nc.Close()
		}
	}

	// The no-auth user keeps a tool without credentials working.
	e2, err := natsx.StartEmbedded(natsx.EmbeddedConfig{StoreDir: t.TempDir(), Listen: "127.0.0.1:0",
		Users: []natsx.EmbeddedUser{{Name: "sonde", Password: pw}, {Name: "tools", Password: natsx.NewPassword()}}, NoAuthUser: "tools"})
	if err != nil {
		t.Fatal(err)
	}
	defer e2.Shutdown(t.Context())
	nc, err = nats.Connect(e2.ClientURL())
	if err != nil {
		t.Fatalf("no-auth user: %v", err)
	}
	nc.Close()
}

// TestStartEmbeddedNamesTheCause: a store that cannot be written, or a port
// that is taken, fails at once with the cause, not after the readiness wait.
func TestStartEmbeddedNamesTheCause(t *testing.T) {
	file := filepath.Join(t.TempDir(), "not-a-dir")
	if err := os.WriteFile(file, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	begin := time.Now()
	_, err := natsx.StartEmbedded(natsx.EmbeddedConfig{StoreDir: file})
	if err == nil || !strings.Contains(err.Error(), file) || !errors.Is(err, syscall.ENOTDIR) {
		t.Fatalf("store is a file: %v", err)
	}
	_, err = natsx.StartEmbedded(natsx.EmbeddedConfig{StoreDir: filepath.Join(file, "nats")})
	if err == nil || !strings.Contains(err.Error(), file) {
		t.Fatalf("store under a file: %v", err)
	}

	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	_, err = natsx.StartEmbedded(natsx.EmbeddedConfig{StoreDir: t.TempDir(), Listen: l.Addr().String()})
	if err == nil || !strings.Contains(err.Error(), "listening") {
		t.Fatalf("port taken: %v", err)
	}
	if took := time.Since(begin); took > 5*time.Second {
		t.Fatalf("the failures took %s to report", took)
	}

	// Permission bits stop everyone but root; root is stopped by a read-only
	// mount instead, which TestCheckWritableDirReadOnlyMount covers where
	// one exists.
	if os.Geteuid() != 0 {
		ro := t.TempDir()
		if err := os.Chmod(ro, 0o500); err != nil {
			t.Fatal(err)
		}
		defer os.Chmod(ro, 0o700)
		_, err = natsx.StartEmbedded(natsx.EmbeddedConfig{StoreDir: ro})
		if err == nil || !strings.Contains(err.Error(), ro) || !errors.Is(err, os.ErrPermission) {
			t.Fatalf("read-only store: %v", err)
		}
	}
}

// TestCheckWritableDirReadOnlyMount proves the check on a read-only file
// system, which refuses root as well: /proc/sys is one on Linux
// (mounted read-only in containers) when it refuses a new file.
func TestCheckWritableDirReadOnlyMount(t *testing.T) {
	dir := "/proc/sys"
	f, err := os.CreateTemp(dir, "probe-*")
	if err == nil {
		f.Close()
		os.Remove(f.Name())
		t.Skip("/proc/sys accepts new files here")
	}
	if err := natsx.CheckWritableDir(dir); err == nil || !strings.Contains(err.Error(), dir) || !strings.Contains(err.Error(), "not writable") {
		t.Fatalf("CheckWritableDir(%s) = %v", dir, err)
	}
}

// TestEmbeddedStoreLimit: a configured limit is the store's limit: a stream
// that reserves more than it is refused, one within it is created; a negative one is refused at start.
func TestEmbeddedStoreLimit(t *testing.T) {
	const limit = 1 << 20
	e, err := natsx.StartEmbedded(natsx.EmbeddedConfig{StoreDir: t.TempDir(), MaxStore: limit})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Shutdown(context.Background()) })
	nc, err := e.Connect("limit-test")
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "SMALL", Subjects: []string{"small"}, MaxBytes: limit / 2}); err != nil {
		t.Fatalf("a stream within the store limit: %v", err)
	}
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "BIG", Subjects: []string{"big"}, MaxBytes: 2 * limit}); err == nil {
		t.Fatal("a stream asking for twice the store limit was created")
	}
	if _, err := natsx.StartEmbedded(natsx.EmbeddedConfig{StoreDir: t.TempDir(), MaxStore: -1}); err == nil {
		t.Fatal("a negative store limit was accepted")
	}
}
