package gateway

import (
	"crypto/subtle"
	"strconv"
	"strings"

	"github.com/sondehq/sonde/contracts"
)

// ParseTokens parses SONDE_API_TOKENS, a comma-separated list of
// token=actor:role entries such as "t0k3n=alice:admin,s3cr3t=bob:member".
// Role is admin or member. Blank input yields no tokens. Errors are
// *TokenError and never contain a token.
func ParseTokens(s string) (map[string]contracts.Actor, error) {
	tokens := map[string]contracts.Actor{}
	if strings.TrimSpace(s) == "" {
		return tokens, nil
	}
	for i, entry := range strings.Split(s, ",") {
		n := i + 1
		entry = strings.TrimSpace(entry)
		if entry == "" {
			return nil, &TokenError{Entry: n, Reason: "empty entry"}
		}
		token, who, ok := strings.Cut(entry, "=")
		if !ok {
			return nil, &TokenError{Entry: n, Reason: "missing '='"}
		}
		token = strings.TrimSpace(token)
		if token == "" {
			return nil, &TokenError{Entry: n, Reason: "empty token"}
		}
		if strings.ContainsFunc(token, isSpaceOrControl) {
			return nil, &TokenError{Entry: n, Reason: "token contains a space or control character"}
		}
		id, role, ok := strings.Cut(strings.TrimSpace(who), ":")
		if !ok {
			return nil, &TokenError{Entry: n, Reason: "missing ':role' after the actor"}
		}
		id, role = strings.TrimSpace(id), strings.TrimSpace(role)
		if id == "" {
			return nil, &TokenError{Entry: n, Reason: "empty actor"}
		}
		if strings.ContainsFunc(id, isSpaceOrControl) || strings.ContainsAny(id, "=:") {
			return nil, &TokenError{Entry: n, Reason: "actor contains a space, control character, '=' or ':'"}
		}
		r := contracts.Role(role)
		if r != contracts.RoleAdmin && r != contracts.RoleMember {
			return nil, &TokenError{Entry: n, Reason: "unknown role " + strconv.Quote(role)}
		}
		if _, dup := tokens[token]; dup {
			return nil, &TokenError{Entry: n, Reason: "token repeats an earlier entry's"}
		}
		tokens[token] = contracts.Actor{ID: id, Role: r}
	}
	return tokens, nil
}

func isSpaceOrControl(r rune) bool { return r <= ' ' || r == 0x7f }

// localActor is every caller of a gateway that listens on loopback with no
// tokens configured.
var localActor = contracts.Actor{ID: "local", Role: contracts.RoleAdmin}

// lookupToken finds the actor of a presented token, comparing every
// configured token in constant time.
func lookupToken(tokens map[string]contracts.Actor, presented string) (contracts.Actor, bool) {
	var found contracts.Actor
	ok := false
	for t, a := range tokens {
		if subtle.ConstantTimeCompare([]byte(t), []byte(presented)) == 1 {
			found, ok = a, true
		}
	}
	return found, ok
}
