// Package storage is msjfarm's object store: campaign specs, manifests,
// per-replication results, summaries, reports and plugin binaries
// (layout in docs/design.md, helpers in layout.go).
//
// One small interface, [Store], has two backends chosen by URL in [Open]:
//
//	/abs/dir, rel/dir, file:///abs/dir       local directory (the default)
//	s3://bucket[/prefix]?endpoint=host:port&secure=false&region=r
//	                                          S3 / MinIO through minio-go v7
//
// Keys are slash-separated relative paths ("campaigns/c1/results/t9.json").
// Every backend rejects empty or absolute keys, empty, "." and ".."
// components, backslashes and NUL bytes, so a key that works on one backend
// works on all of them.
//
// Writes are atomic: a reader sees either the previous object or the whole
// new one, never a prefix. A write that returns is durable (the local
// backend syncs the data before naming it and the name before returning,
// sharing the syncs of concurrent writers; an S3 service acknowledges a
// stored object), which is what lets a worker ack a task once its result
// is written. [Store.PutIfAbsent] is the idempotent write used for
// results keyed by task id: among concurrent writers of one key exactly one
// reports created=true, and an existing object is never overwritten.
package storage

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/msjfarm/msjfarm/internal/redact"
)

// Store is an object store holding msjfarm's campaign data.
// Implementations are safe for concurrent use.
type Store interface {
	// Put stores data under key, replacing any existing object atomically.
	Put(ctx context.Context, key string, data []byte) error
	// PutIfAbsent stores data under key unless an object already exists
	// there. created reports whether this call wrote the object; when it is
	// false the existing object is left untouched.
	PutIfAbsent(ctx context.Context, key string, data []byte) (created bool, err error)
	// Get returns the object's contents; errors.Is(err, ErrNotFound) when
	// the key does not exist.
	Get(ctx context.Context, key string) ([]byte, error)
	// Stat returns the object's size and modification time; ErrNotFound
	// when the key does not exist.
	Stat(ctx context.Context, key string) (Info, error)
	// List returns all keys that start with prefix (a plain string prefix,
	// usually ending in "/"; "" lists everything), sorted.
	List(ctx context.Context, prefix string) ([]string, error)
	// PutFile streams the local file at path into key (atomically), for
	// large objects such as plugin binaries.
	PutFile(ctx context.Context, key, path string) error
	// GetFile streams key into the local file at path. The file is written
	// under a temporary name and renamed into place once complete, so path
	// never holds a partial download. ErrNotFound when the key is missing.
	GetFile(ctx context.Context, key, path string) error
	// Delete removes key. Deleting a missing key is not an error.
	Delete(ctx context.Context, key string) error
	// URL is the store's location in the form Open accepts (never with
	// credentials).
	URL() string
}

// Info describes a stored object.
type Info struct {
	Key     string
	Size    int64
	ModTime time.Time
}

var (
	// ErrNotFound is returned (wrapped in *Error) when a key does not exist.
	ErrNotFound = errors.New("not found")
	// ErrInvalidKey is returned (wrapped in *Error) for keys no backend accepts.
	ErrInvalidKey = errors.New("invalid key")
)

// Error is the error type returned by every Store operation. It names the
// operation, the key and the store, and wraps the cause, so
// errors.Is(err, ErrNotFound) and errors.Is(err, ErrInvalidKey) work.
type Error struct {
	Op    string // "get", "put", ...
	Key   string // the key (or list prefix)
	Store string // Store.URL() of the backend
	Err   error
}

func (e *Error) Error() string {
	return fmt.Sprintf("storage: %s %q in %s: %v", e.Op, e.Key, e.Store, e.Err)
}

func (e *Error) Unwrap() error { return e.Err }

// Option configures Open.
type Option func(*options)

type options struct {
	accessKey, secretKey string
	noCreate             bool
	caFile               string
}

// NoCreate makes Open create nothing: a missing local directory or S3
// bucket is an error wrapping ErrNotFound. A dry run opens storage so,
// to read what is stored without writing anything.
func NoCreate() Option { return func(o *options) { o.noCreate = true } }

// WithCredentials sets the S3 access and secret key explicitly, overriding
// the environment. The local backend ignores it.
func WithCredentials(accessKey, secretKey string) Option {
	return func(o *options) { o.accessKey, o.secretKey = accessKey, secretKey }
}

// WithCA makes an S3 store trust the CA certificates (PEM) in file as well
// as the system's, for an endpoint over HTTPS with a private CA (a MinIO
// started with --certs-dir). Without it, $MSJFARM_S3_CA is used if set. The
// local backend ignores it.
func WithCA(file string) Option { return func(o *options) { o.caFile = file } }

// Open returns the Store for rawURL:
//
//   - "file:///abs/dir" or a plain path (relative paths are made absolute):
//     a local directory, created if missing.
//   - "s3://bucket[/prefix]?endpoint=host:port&secure=false&region=...":
//     an S3-compatible service; the bucket is created if missing. endpoint
//     defaults to s3.amazonaws.com and secure to true. Credentials come from
//     WithCredentials, else from MSJFARM_S3_ACCESS_KEY/MSJFARM_S3_SECRET_KEY,
//     AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY (with AWS_SESSION_TOKEN), or
//     MINIO_ROOT_USER/MINIO_ROOT_PASSWORD, in that order.
//
// Open checks that the store is reachable (and, for S3, that the
// credentials work), bounded by ctx. rawURL is checked first (CheckURL).
func Open(ctx context.Context, rawURL string, opts ...Option) (Store, error) {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	if err := CheckURL(rawURL); err != nil {
		return nil, err
	}
	scheme, _, hasScheme := strings.Cut(rawURL, "://")
	if !hasScheme {
		return openLocal(rawURL, o.noCreate)
	}
	u, _ := url.Parse(rawURL) // CheckURL parsed it
	if strings.EqualFold(scheme, "file") {
		return openLocal(filepath.FromSlash(u.Path), o.noCreate)
	}
	return openS3(ctx, u, o)
}

// CheckURL reports what is wrong with a store URL, without contacting
// anything, so that a command can refuse it as a usage error before it
// starts. Its errors never repeat a value that may hold a secret: a
// password in a URL that does not parse was printed whole (url.Parse
// quotes its input), and an s3:/ or host:port without "//" silently
// became a local directory of that name.
func CheckURL(rawURL string) error {
	if rawURL == "" {
		return errors.New("storage: empty store URL")
	}
	if i := strings.IndexFunc(rawURL, func(r rune) bool { return r < 0x20 || r == 0x7f }); i >= 0 {
		// A variable set from a file or by `echo` ends with a newline:
		// MSJFARM_STORAGE=$'data\n' made a directory named "data\n".
		return fmt.Errorf("storage: the store value holds a control character (%q at byte %d; a newline from a file or echo?)", rawURL[i], i)
	}
	scheme, _, hasScheme := strings.Cut(rawURL, "://")
	if !hasScheme {
		return checkPlainPath(rawURL)
	}
	u, err := url.Parse(rawURL)
	if err != nil {
		return fmt.Errorf("storage: the store URL (%s://…) does not parse as a URL; it is not repeated here, since it may hold a secret "+
			"(a password with '/', '+' or spaces, say): want s3://bucket/prefix?endpoint=host:port or file:///absolute/path", safeScheme(scheme))
	}
	switch strings.ToLower(scheme) {
	case "file":
		shown := redact.URL(rawURL)
		switch {
		case u.User != nil:
			return fmt.Errorf("storage: %s: a file URL takes no user name or password: it would be ignored", shown)
		case u.Host != "" && u.Host != "localhost":
			return fmt.Errorf("storage: %s: file URLs must be file:///absolute/path (host %q not supported)", shown, u.Host)
		case u.Path == "" || !filepath.IsAbs(filepath.FromSlash(u.Path)):
			return fmt.Errorf("storage: %s: file URLs must be file:///absolute/path", shown)
		case u.RawQuery != "" || u.Fragment != "" || u.ForceQuery:
			return fmt.Errorf("storage: %s: a file URL takes no parameters (?…) or fragment (#…): they would be dropped; give a path holding '?' or '#' without file://", shown)
		}
		return nil
	case "s3":
		_, err := parseS3URL(u)
		return err
	}
	return fmt.Errorf("storage: %s: unsupported scheme %q (want file:// or s3://)", u.Redacted(), safeScheme(scheme))
}

// checkPlainPath refuses a value without "//" that reads as a URL or a
// server address rather than a directory: "s3:/farm?endpoint=…",
// "file:/tmp/x" and "127.0.0.1:9501" each became a local directory of
// that name beside the command, and the run exited 0. A directory whose
// name really is such is written with a leading ./ or as an absolute
// path.
func checkPlainPath(p string) error {
	if strings.HasPrefix(p, "/") || strings.HasPrefix(p, ".") {
		return nil
	}
	first, _, _ := strings.Cut(p, "/")
	if host, port, err := net.SplitHostPort(first); err == nil && host != "" && port != "" && !strings.ContainsAny(port, "/") {
		if _, err := strconv.Atoi(port); err == nil {
			return fmt.Errorf("storage: a store %q reads as a server's host:port, not a directory: an S3 server is s3://bucket?endpoint=%s (for a directory of that name, write ./ before it)",
				first, first)
		}
	}
	if scheme, _, ok := strings.Cut(first, ":"); ok && isScheme(scheme) {
		return fmt.Errorf("storage: a store starting %q reads as a URL without its \"//\": want s3://bucket/prefix?endpoint=host:port or file:///absolute/path (for a directory of that name, write ./ before it)",
			safeScheme(scheme)+":")
	}
	return nil
}

// isScheme reports whether s has the form of a URL scheme (RFC 3986:
// a letter, then letters, digits, '+', '-' or '.').
func isScheme(s string) bool {
	if s == "" || !(s[0] >= 'a' && s[0] <= 'z' || s[0] >= 'A' && s[0] <= 'Z') {
		return false
	}
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '+' || c == '-' || c == '.') {
			return false
		}
	}
	return true
}

// safeScheme is scheme when it has a scheme's form, else a placeholder:
// what precedes "://" may be anything, a secret among it.
func safeScheme(scheme string) string {
	if isScheme(scheme) && len(scheme) <= 16 {
		return scheme
	}
	return "<not a scheme>"
}

// tmpMarker starts the names of temporary files of the local backend. Key
// components may not start with it, so temporaries never collide with or
// show up as objects.
const tmpMarker = ".msjfarm-tmp-"

// ValidateKey reports whether key is acceptable to every backend: a
// non-empty relative slash path without empty, "." or ".." components,
// backslashes or NUL bytes.
func ValidateKey(key string) error {
	if key == "" {
		return errors.New("key is empty")
	}
	if strings.HasPrefix(key, "/") {
		return errors.New("key must be relative, not start with /")
	}
	if strings.ContainsAny(key, "\\\x00") {
		return errors.New("key must not contain backslashes or NUL bytes")
	}
	for c := range strings.SplitSeq(key, "/") {
		switch {
		case c == "":
			return errors.New("key has an empty path component (// or trailing /)")
		case c == "." || c == "..":
			return fmt.Errorf("key must not contain %q components", c)
		case strings.HasPrefix(c, tmpMarker):
			return fmt.Errorf("key components must not start with %q (reserved for temporary files)", tmpMarker)
		}
	}
	return nil
}

// validatePrefix checks a List prefix: "" or a string that could start a
// valid key.
func validatePrefix(prefix string) error {
	if prefix == "" {
		return nil
	}
	// "a/b/" is fine, so validate it as if one more character followed.
	return ValidateKey(prefix + "x")
}

func keyErr(op, key, store string, err error) error {
	return &Error{Op: op, Key: key, Store: store, Err: err}
}

func invalidKey(op, key, store string, why error) error {
	return keyErr(op, key, store, fmt.Errorf("%w: %v", ErrInvalidKey, why))
}

// CheckWritable stores and deletes a small probe object, so that a store
// that is read-only (a read-only directory, credentials without write
// permission) is reported when a command starts, naming the store, rather
// than as failed results once work has been done.
func CheckWritable(ctx context.Context, st Store) error {
	host, _ := os.Hostname()
	key := fmt.Sprintf("runs/write-probe-%s-%d-%d", strings.ReplaceAll(host, "/", "_"), os.Getpid(), time.Now().UnixNano())
	if err := st.Put(ctx, key, []byte("probe\n")); err != nil {
		if r := Reason(err); r != "" {
			return fmt.Errorf("storage %s is not writable: %s: %w", st.URL(), r, err)
		}
		return fmt.Errorf("storage %s is not writable: %w", st.URL(), err)
	}
	if err := st.Delete(ctx, key); err != nil {
		return fmt.Errorf("storage %s: deleting a probe object: %w", st.URL(), err)
	}
	return nil
}
