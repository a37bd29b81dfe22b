package wire

import (
	"fmt"
	"net/url"
)

// BaseURL resolves a provider's base URL: the configured one, or fallback
// when none is configured. It must be an absolute http(s) URL.
func BaseURL(configured, fallback string) (*url.URL, error) {
	raw := configured
	if raw == "" {
		raw = fallback
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("API URL %q is not an http(s) URL", raw)
	}
	return u, nil
}
