package connections

import (
	"crypto/sha256"
	"encoding/hex"
	"maps"
	"net"
	"net/url"
	"path/filepath"
	"slices"
	"strings"

	"github.com/sondehq/sonde/contracts"
	enginespec "github.com/sondehq/sonde/pkg/engine"
)

// Descriptor is what an executor publishes about c: id, engine, description
// and Identity, never a DSN, a password or a path.
func (c Connection) Descriptor() contracts.ConnectionDescriptor {
	return contracts.ConnectionDescriptor{
		ID:          c.ID,
		Engine:      c.Engine,
		Description: c.Description,
		Identity:    c.Identity(),
		Policy:      c.PolicyDigest(),
		Demo:        c.Demo,
		Readable:    slices.Clone(c.Readable),
		LargeTables: maps.Clone(c.LargeTables),
	}
}

// PolicyDigest fingerprints what the connection lets a statement read (its
// readable patterns), so that what was learnt under one policy — a captured
// inventory — is not reused under another.
func (c Connection) PolicyDigest() string {
	h := sha256.New()
	for _, p := range c.Readable {
		h.Write([]byte(p))
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil)[:12])
}

// Identity is a hex SHA-256 fingerprint of what the connection reaches, so two
// descriptors can be compared without revealing it. For a server engine it
// hashes engine, host, port, database and role (the DSN's user), never the
// password; for a file engine it hashes engine and the absolute file path.
func (c Connection) Identity() string {
	var parts []string
	if FileEngine(c.Engine) {
		p := c.Path
		if abs, err := filepath.Abs(p); err == nil {
			p = abs
		}
		parts = []string{string(c.Engine), filepath.Clean(p)}
	} else {
		host, port, database, role := serverIdentity(c.Engine, c.DSN)
		parts = []string{string(c.Engine), host, port, database, role}
	}
	sum := sha256.Sum256([]byte(strings.Join(parts, "\x00")))
	return hex.EncodeToString(sum[:])
}

// serverIdentity extracts host, port, database and role from a URL DSN
// (postgres://user@host:5432/db, sqlserver://user@host:1433?database=db) or
// a keyword/value DSN (host=… port=… dbname=… user=…).
func serverIdentity(engine contracts.Engine, dsn string) (host, port, database, role string) {
	if u, err := url.Parse(dsn); err == nil && u.Scheme != "" && u.Host != "" {
		host, port = u.Hostname(), u.Port()
		database = strings.TrimPrefix(u.Path, "/")
		q := u.Query()
		for _, k := range []string{"database", "dbname"} {
			if v := q.Get(k); v != "" {
				database = v
			}
		}
		if u.User != nil {
			role = u.User.Username()
		}
		if v := q.Get("user"); v != "" {
			role = v
		}
	} else {
		for _, field := range strings.Fields(dsn) {
			k, v, ok := strings.Cut(field, "=")
			if !ok {
				continue
			}
			v = strings.Trim(v, "'")
			switch strings.ToLower(k) {
			case "host", "server", "data source":
				host = v
			case "port":
				port = v
			case "dbname", "database", "initial catalog":
				database = v
			case "user", "user id", "uid":
				role = v
			}
		}
		if h, p, err := net.SplitHostPort(host); err == nil {
			host, port = h, p
		}
	}
	if s, ok := enginespec.Lookup(engine); ok && port == "" {
		port = s.DefaultPort
	}
	return strings.ToLower(host), port, database, role
}
