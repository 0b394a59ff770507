package storage

import (
	"net/url"
	"path/filepath"
	"strings"

	"github.com/msjfarm/msjfarm/internal/redact"
)

// Location is where the object key of the store at storeURL (a
// Store.URL()) can be found, for messages that tell the user where an
// output is: a file path for a local store (file:// URL or directory), and
// otherwise a URL whose path continues with the key and whose query comes
// after it. An S3 URL names its endpoint in the query, so appending the key
// to the URL's text would put it inside the query (s3://b?endpoint=h/key,
// a location no tool can open); Location gives s3://b/key?endpoint=h.
// Credentials in storeURL (a Store's URL has none, but Location does not
// rely on it) are masked.
func Location(storeURL, key string) string {
	u, err := url.Parse(storeURL)
	if err != nil || u.Scheme == "" {
		return filepath.Join(storeURL, filepath.FromSlash(key))
	}
	if strings.EqualFold(u.Scheme, "file") {
		return filepath.Join(filepath.FromSlash(u.Path), filepath.FromSlash(key))
	}
	// Join the escaped forms, so that an escape in the store's path (a
	// prefix with a "%2F") survives String's re-encoding.
	ek := (&url.URL{Path: key}).EscapedPath()
	u.RawPath = strings.TrimSuffix(u.EscapedPath(), "/") + "/" + ek
	u.Path = strings.TrimSuffix(u.Path, "/") + "/" + key
	return redact.URL(u.String())
}
