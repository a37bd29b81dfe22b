package wire

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
)

// Adapter is what every vendor adapter's New derives from its Config the
// same way: the API root, the HTTP client the SDK is given and the logger.
type Adapter struct {
	BaseURL *url.URL
	HTTP    *http.Client
	Log     *slog.Logger
}

// Credential is how a vendor's key travels: Value is set as Header on
// every request (nothing when Value is empty), and every header in Strip is
// removed first, so a credential an SDK picked up elsewhere never goes out.
type Credential struct {
	Header, Value string
	Strip         []string
}

// NewAdapter checks that a model is named, resolves baseURL (fallback when
// empty, see BaseURL), and builds the HTTP client that sends cred alone;
// errors name the adapter. hc, when not nil, carries the calls as it is
// (the SDK then sends the key by its own option). A nil log discards.
func NewAdapter(name, model, baseURL, fallback string, cred Credential, hc *http.Client, log *slog.Logger) (Adapter, error) {
	if model == "" {
		return Adapter{}, errors.New(name + ": no model named")
	}
	u, err := BaseURL(baseURL, fallback)
	if err != nil {
		return Adapter{}, fmt.Errorf("%s: %w", name, err)
	}
	if hc == nil {
		var set http.Header
		if cred.Value != "" {
			set = http.Header{}
			set.Set(cred.Header, cred.Value)
		}
		hc = Client(cred.Strip, set)
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return Adapter{BaseURL: u, HTTP: hc, Log: log}, nil
}
