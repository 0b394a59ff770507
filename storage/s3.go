package storage

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
	"github.com/minio/minio-go/v7/pkg/s3utils"
)

// s3Store keeps objects in one bucket, under an optional key prefix.
type s3Store struct {
	client *minio.Client
	bucket string
	base   string // "" or "some/prefix/"
	url    string
	// endpoint is the server's host:port, named in Open's errors.
	endpoint string
}

// credentialEnv lists the environment variable pairs consulted, in order,
// when no explicit credentials are given.
var credentialEnv = [][2]string{
	{"MSJFARM_S3_ACCESS_KEY", "MSJFARM_S3_SECRET_KEY"},
	{"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"},
	{"MINIO_ROOT_USER", "MINIO_ROOT_PASSWORD"},
}

// openS3 opens the bucket an s3:// URL names: it reads the URL, finds the
// credentials, builds the clients and checks (or creates) the bucket
// before returning, so that a wrong endpoint or credentials fail here.
func openS3(ctx context.Context, u *url.URL, o options) (Store, error) {
	loc, err := parseS3URL(u)
	if err != nil {
		return nil, err
	}
	canon := loc.canonical()
	access, secret, token := s3Credentials(o)
	if half := halfPair(o); half != "" {
		return nil, fmt.Errorf("storage: %s: %s", canon, half)
	}
	if access == "" || secret == "" {
		return nil, fmt.Errorf("storage: %s: no S3 credentials: set MSJFARM_S3_ACCESS_KEY and MSJFARM_S3_SECRET_KEY "+
			"(or AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, or MINIO_ROOT_USER/MINIO_ROOT_PASSWORD)", canon)
	}
	caFile := o.caFile
	if caFile == "" {
		caFile = os.Getenv(EnvS3CA)
	}
	transport, err := s3Transport(loc.secure, caFile)
	if err != nil {
		return nil, fmt.Errorf("storage: %s: %w", canon, err)
	}
	mopts := minio.Options{
		Creds:     credentials.NewStaticV4(access, secret, token),
		Secure:    loc.secure,
		Region:    loc.region,
		Transport: transport,
	}
	client, err := minio.New(loc.endpoint, &mopts)
	if err != nil {
		return nil, fmt.Errorf("storage: %s: %w", canon, err)
	}
	// Open's own checks go through a client that tries each request once
	// (minio-go otherwise retries a refused connection ten times, with
	// back-off, inside every call) and are bounded by OpenTimeout: a
	// wrong endpoint or wrong credentials must be a clear error within
	// seconds, not a minute of silent retries. The store's client keeps
	// minio-go's retries for the blips of a long campaign.
	popts := mopts
	popts.MaxRetries = 1
	probe, err := minio.New(loc.endpoint, &popts)
	if err != nil {
		return nil, fmt.Errorf("storage: %s: %w", canon, err)
	}
	ctx, cancel := context.WithTimeout(ctx, OpenTimeout)
	defer cancel()
	s := &s3Store{client: probe, bucket: loc.bucket, base: loc.base, url: canon, endpoint: loc.endpoint}
	if err := s.checkBucket(ctx, o.noCreate, loc.region); err != nil {
		return nil, err
	}
	s.client = client
	return s, nil
}

// s3Location is what an s3:// URL names: the bucket, a key prefix ("" or
// ending in "/") and the server.
type s3Location struct {
	bucket, base     string
	endpoint, region string
	secure           bool
}

// parseS3URL reads s3://bucket/prefix?endpoint=host:port&secure=&region=.
// Credentials in the URL and unknown parameters are errors: the first
// would be printed with the URL, the second silently ignored.
func parseS3URL(u *url.URL) (s3Location, error) {
	l := s3Location{bucket: u.Host, secure: true}
	if l.bucket == "" {
		return l, fmt.Errorf("storage: %s: missing bucket (want s3://bucket/prefix?endpoint=host:port)", u.Redacted())
	}
	if u.User != nil {
		return l, fmt.Errorf("storage: s3://%s: credentials in the URL are not supported; use MSJFARM_S3_ACCESS_KEY/MSJFARM_S3_SECRET_KEY", l.bucket)
	}
	if base := strings.Trim(u.Path, "/"); base != "" {
		if err := ValidateKey(base); err != nil {
			return l, fmt.Errorf("storage: s3://%s/%s: bad prefix: %v", l.bucket, base, err)
		}
		l.base = base + "/"
	}
	q := u.Query()
	l.endpoint = q.Get("endpoint")
	schemed := false
	if scheme, host, ok := strings.Cut(l.endpoint, "://"); ok { // endpoint=http://host:port
		// Any other scheme was taken for https, and HTTP:// too.
		switch strings.ToLower(scheme) {
		case "http":
			l.secure = false
		case "https":
		default:
			return l, fmt.Errorf("storage: s3://%s: endpoint scheme %q: want http:// or https:// (or host:port with secure=false for http)", l.bucket, scheme)
		}
		l.endpoint, schemed = strings.TrimSuffix(host, "/"), true
	}
	if err := checkEndpoint(l.endpoint); err != nil {
		return l, fmt.Errorf("storage: s3://%s: endpoint: %v", l.bucket, err)
	}
	if u.Fragment != "" || strings.HasSuffix(u.String(), "#") {
		return l, fmt.Errorf("storage: s3://%s: a URL fragment (#…) is not part of a store's name: it was dropped, so the store opened was not quite the one named", l.bucket)
	}
	if l.endpoint == "" {
		l.endpoint = "s3.amazonaws.com"
	}
	if v := q.Get("secure"); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return l, fmt.Errorf("storage: s3://%s: secure=%q: want true or false", l.bucket, v)
		}
		if schemed && b != l.secure {
			// secure=false silently overrode an https:// endpoint: plain
			// HTTP, credentials and all, where TLS was written.
			return l, fmt.Errorf("storage: s3://%s: the endpoint's scheme says %s and secure=%s says otherwise: give one of them", l.bucket, map[bool]string{true: "https", false: "http"}[l.secure], v)
		}
		l.secure = b
	}
	l.region = q.Get("region")
	for k := range q {
		if k != "endpoint" && k != "secure" && k != "region" {
			return l, fmt.Errorf("storage: s3://%s: unknown URL parameter %q (known: endpoint, secure, region)", l.bucket, k)
		}
	}
	// Checked here, where a bad name would otherwise reach the network as
	// a host name (Bad_Bucket.s3.amazonaws.com: no such host).
	if err := s3utils.CheckValidBucketNameStrict(l.bucket); err != nil {
		return l, fmt.Errorf("storage: s3://%s: not a valid bucket name: %v", l.bucket, err)
	}
	return l, nil
}

// checkEndpoint refuses an endpoint that is more than host[:port]: a
// user name or password before '@' was never used (the credentials come
// from the environment) but was printed with the store's URL, and stored
// in the campaign's manifest and report; a path or query was dropped.
// The value itself is not repeated: it may hold a secret.
func checkEndpoint(ep string) error {
	if i := strings.LastIndex(ep, "@"); i >= 0 {
		return errors.New("it holds a user name or password (before '@'), which is never used and would be printed with the store's URL: " +
			"give the credentials as MSJFARM_S3_ACCESS_KEY/MSJFARM_S3_SECRET_KEY (or a config file's s3-access-key and s3-secret-key)")
	}
	if strings.ContainsAny(ep, "/?#\\ ") {
		return fmt.Errorf("%q is not host:port (no path, query or spaces)", ep)
	}
	if _, port, err := net.SplitHostPort(ep); err == nil {
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
			return fmt.Errorf("%q: port %q is not in 1..65535", ep, port)
		}
	}
	return nil
}

// canonical is the location's URL without credentials, the store's URL.
func (l s3Location) canonical() string {
	cq := url.Values{"endpoint": {l.endpoint}}
	if !l.secure {
		cq.Set("secure", "false")
	}
	if l.region != "" {
		cq.Set("region", l.region)
	}
	canon := "s3://" + l.bucket
	if l.base != "" {
		canon += (&url.URL{Path: "/" + strings.TrimSuffix(l.base, "/")}).EscapedPath()
	}
	return canon + "?" + strings.ReplaceAll(cq.Encode(), "%3A", ":") // host:port reads better unescaped; ':' is legal in a query
}

// halfPair says which variable is missing when the first pair of
// credentialEnv that has either variable set lacks the other, and no
// explicit credentials are given; "" otherwise.
func halfPair(o options) string {
	if o.accessKey != "" || o.secretKey != "" {
		return ""
	}
	for _, pair := range credentialEnv {
		a, s := os.Getenv(pair[0]), os.Getenv(pair[1])
		switch {
		case a != "" && s == "":
			return pair[0] + " is set and " + pair[1] + " is not: set both (another pair of the environment is not used in their place)"
		case a == "" && s != "":
			return pair[1] + " is set and " + pair[0] + " is not: set both (another pair of the environment is not used in their place)"
		case a != "":
			return ""
		}
	}
	return ""
}

// s3Credentials are the options' credentials, or else the first pair
// of credentialEnv set (with AWS_SESSION_TOKEN for the AWS pair); empty
// when there are none.
func s3Credentials(o options) (access, secret, token string) {
	access, secret = o.accessKey, o.secretKey
	if access != "" || secret != "" {
		return access, secret, ""
	}
	for _, pair := range credentialEnv {
		a, s := os.Getenv(pair[0]), os.Getenv(pair[1])
		if (a == "") != (s == "") {
			// Half a pair: the next pair set (AWS_*) was used instead,
			// another identity, without a word; or the error said
			// "set MSJFARM_S3_ACCESS_KEY" of one that was set.
			return "", "", ""
		}
		if a != "" && s != "" {
			if pair[0] == "AWS_ACCESS_KEY_ID" {
				token = os.Getenv("AWS_SESSION_TOKEN")
			}
			return a, s, token
		}
	}
	return "", "", ""
}

// checkBucket makes sure the bucket is there: with noCreate it must
// exist already, otherwise it is created if missing.
func (s *s3Store) checkBucket(ctx context.Context, noCreate bool, region string) error {
	if !noCreate {
		return s.ensureBucket(ctx, region)
	}
	exists, err := s.bucketExists(ctx)
	if err != nil {
		return s.openErr("checking bucket", err)
	}
	if !exists {
		return fmt.Errorf("storage: %s: bucket missing: bucket %s does not exist at %s: %w", s.url, s.bucket, s.endpoint, ErrNotFound)
	}
	return nil
}

// EnvS3CA names a CA certificate file (PEM) trusted for S3 over HTTPS when
// WithCA is not given.
const EnvS3CA = "MSJFARM_S3_CA"

// s3Transport is minio-go's default transport, trusting the certificates in
// caFile besides the system's; nil (minio-go's default) without a file.
func s3Transport(secure bool, caFile string) (http.RoundTripper, error) {
	if caFile == "" {
		return nil, nil
	}
	pem, err := os.ReadFile(caFile)
	if err != nil {
		return nil, fmt.Errorf("S3 CA certificate: %w", err)
	}
	pool, err := x509.SystemCertPool()
	if err != nil || pool == nil {
		pool = x509.NewCertPool()
	}
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("S3 CA certificate %s: no PEM certificate in it", caFile)
	}
	tr, err := minio.DefaultTransport(secure)
	if err != nil {
		return nil, err
	}
	if tr.TLSClientConfig == nil {
		tr.TLSClientConfig = &tls.Config{MinVersion: tls.VersionTLS12}
	}
	tr.TLSClientConfig.RootCAs = pool
	return tr, nil
}

// ensureBucket creates the bucket if it does not exist, tolerating another
// process creating it at the same time. It also verifies the endpoint and
// credentials, so misconfiguration fails in Open with a clear message.
func (s *s3Store) ensureBucket(ctx context.Context, region string) error {
	exists, err := s.bucketExists(ctx)
	if err != nil {
		return s.openErr("checking bucket", err)
	}
	if exists {
		return nil
	}
	err = s.client.MakeBucket(ctx, s.bucket, minio.MakeBucketOptions{Region: region})
	if err == nil {
		return nil
	}
	switch minio.ToErrorResponse(err).Code {
	case minio.BucketAlreadyOwnedByYou:
		return nil // lost a creation race to another of our processes
	case minio.BucketAlreadyExists:
		// On MinIO this is also a lost race; on AWS the name may belong
		// to someone else, which the existence check tells apart.
		if ok, err2 := s.client.BucketExists(ctx, s.bucket); err2 == nil && ok {
			return nil
		}
	}
	return s.openErr("creating bucket", err)
}

// OpenTimeout bounds the checks Open makes of an S3 store (the bucket
// exists, the credentials work), whatever the caller's context allows: an
// unreachable endpoint or wrong credentials are reported within it.
var OpenTimeout = 7 * time.Second

// startupWait bounds how long Open waits for a server that refuses
// connections or answers that it is still initialising (MinIO reports
// ready on its health endpoint a moment before its object layer accepts
// calls, and again after a restart), so that a store started at the same
// moment as msjfarm is not an error, while a wrong port still is, quickly.
const startupWait = 5 * time.Second

// bucketExists is BucketExists, retrying a refused connection and MinIO's
// transient "server not initialized" answer for up to startupWait.
func (s *s3Store) bucketExists(ctx context.Context) (bool, error) {
	deadline := time.Now().Add(startupWait)
	for delay := 50 * time.Millisecond; ; delay = min(2*delay, time.Second) {
		ok, err := s.client.BucketExists(ctx, s.bucket)
		transient := minio.ToErrorResponse(err).Code == "XMinioServerNotInitialized" || errors.Is(err, syscall.ECONNREFUSED)
		if err == nil || !transient || time.Now().Add(delay).After(deadline) {
			return ok, err
		}
		select {
		case <-ctx.Done():
			return false, err
		case <-time.After(delay):
		}
	}
}

// openErr is an error of Open's checks: it names the endpoint and the
// cause first ("connection refused", "timed out", "access denied"), then
// the operation and the underlying error.
func (s *s3Store) openErr(what string, err error) error {
	reason := Reason(err)
	if reason == "timed out" {
		reason = fmt.Sprintf("timed out (no answer within %v)", OpenTimeout)
	}
	if reason == "" {
		return fmt.Errorf("storage: %s: %s %q at %s: %w", s.url, what, s.bucket, s.endpoint, err)
	}
	return fmt.Errorf("storage: %s: %s: %s: %s %q: %w", s.url, s.endpoint, reason, what, s.bucket, err)
}

func (s *s3Store) URL() string { return s.url }

// object validates key and returns the object name within the bucket.
func (s *s3Store) object(op, key string) (string, error) {
	if err := ValidateKey(key); err != nil {
		return "", invalidKey(op, key, s.url, err)
	}
	return s.base + key, nil
}

// isNotFound reports whether err from a HEAD/GET means "no such key".
func isNotFound(err error) bool {
	resp := minio.ToErrorResponse(err)
	return resp.Code == minio.NoSuchKey ||
		(resp.StatusCode == http.StatusNotFound && resp.Code != minio.NoSuchBucket)
}

func (s *s3Store) err(op, key string, err error) error {
	if isNotFound(err) {
		err = ErrNotFound
	}
	return keyErr(op, key, s.url, err)
}

var putOpts = minio.PutObjectOptions{ContentType: "application/octet-stream"}

func (s *s3Store) Put(ctx context.Context, key string, data []byte) error {
	obj, err := s.object("put", key)
	if err != nil {
		return err
	}
	// Always pass the real size: with -1 minio-go buffers a 5 TiB/10000
	// (~0.5 GiB) part in memory. S3 PUTs are atomic.
	if _, err := s.client.PutObject(ctx, s.bucket, obj, bytes.NewReader(data), int64(len(data)), putOpts); err != nil {
		return keyErr("put", key, s.url, err)
	}
	return nil
}

// PutIfAbsent uses a conditional PUT (If-None-Match: *, minio-go's
// SetMatchETagExcept("*")), which MinIO and AWS S3 evaluate atomically: one
// concurrent writer wins, the others get 412 PreconditionFailed. A server that
// ignores the header would let a second writer overwrite the object and also
// report created=true; for msjfarm's results that is harmless, since keys
// are task ids (content hashes) and a task's result is deterministic, so both
// writers store the same bytes.
func (s *s3Store) PutIfAbsent(ctx context.Context, key string, data []byte) (bool, error) {
	const op = "putifabsent"
	obj, err := s.object(op, key)
	if err != nil {
		return false, err
	}
	opts := putOpts
	opts.SetMatchETagExcept("*")
	// A single PUT carries the condition (multipart uploads would need it
	// on the completion request); results are far below the 5 GiB limit.
	opts.DisableMultipart = true
	for attempt := 0; ; attempt++ {
		_, err = s.client.PutObject(ctx, s.bucket, obj, bytes.NewReader(data), int64(len(data)), opts)
		if err == nil {
			return true, nil
		}
		resp := minio.ToErrorResponse(err)
		switch {
		case resp.Code == minio.PreconditionFailed || resp.StatusCode == http.StatusPreconditionFailed:
			return false, nil
		case resp.StatusCode == http.StatusConflict && attempt < 5:
			// AWS answers 409 ConditionalRequestConflict while another
			// conditional write of the key is in flight: retry, and the
			// retry sees the winner's object (412).
			select {
			case <-ctx.Done():
				return false, keyErr(op, key, s.url, ctx.Err())
			case <-time.After(time.Duration(50<<attempt) * time.Millisecond):
			}
			continue
		}
		return false, keyErr(op, key, s.url, err)
	}
}

func (s *s3Store) PutFile(ctx context.Context, key, path string) error {
	obj, err := s.object("putfile", key)
	if err != nil {
		return err
	}
	f, err := os.Open(path)
	if err != nil {
		return keyErr("putfile", key, s.url, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return keyErr("putfile", key, s.url, err)
	}
	if !st.Mode().IsRegular() {
		return keyErr("putfile", key, s.url, fmt.Errorf("%s is not a regular file", path))
	}
	// Known size: minio-go picks the part size from it (multipart above
	// 16 MiB) instead of allocating for an unknown-length stream.
	if _, err := s.client.PutObject(ctx, s.bucket, obj, f, st.Size(), putOpts); err != nil {
		return keyErr("putfile", key, s.url, err)
	}
	return nil
}

// open issues one GET and returns the body with the object info from the
// same response. Unlike minio.Client.GetObject, whose lazy *Object reports a
// missing key only on the first Read and, when Stat is called first, sends a
// HEAD and then a GET with If-Match that fails (412) if the object was
// replaced in between, this reports a missing key here as ErrNotFound and
// the size always matches the body.
func (s *s3Store) open(ctx context.Context, op, key string) (io.ReadCloser, minio.ObjectInfo, error) {
	obj, err := s.object(op, key)
	if err != nil {
		return nil, minio.ObjectInfo{}, err
	}
	body, info, _, err := minio.Core{Client: s.client}.GetObject(ctx, s.bucket, obj, minio.GetObjectOptions{})
	if err != nil {
		return nil, minio.ObjectInfo{}, s.err(op, key, err)
	}
	return body, info, nil
}

func (s *s3Store) Get(ctx context.Context, key string) ([]byte, error) {
	o, info, err := s.open(ctx, "get", key)
	if err != nil {
		return nil, err
	}
	defer o.Close()
	if info.Size < 0 {
		return nil, keyErr("get", key, s.url, errors.New("server sent no object size"))
	}
	data := make([]byte, info.Size)
	if _, err := io.ReadFull(o, data); err != nil {
		return nil, s.err("get", key, err)
	}
	return data, nil
}

func (s *s3Store) GetFile(ctx context.Context, key, path string) error {
	o, info, err := s.open(ctx, "getfile", key)
	if err != nil {
		return err
	}
	defer o.Close()
	if err := writeFileAtomic(path, o, info.Size); err != nil {
		return s.err("getfile", key, err)
	}
	return nil
}

func (s *s3Store) Stat(ctx context.Context, key string) (Info, error) {
	obj, err := s.object("stat", key)
	if err != nil {
		return Info{}, err
	}
	info, err := s.client.StatObject(ctx, s.bucket, obj, minio.StatObjectOptions{})
	if err != nil {
		return Info{}, s.err("stat", key, err)
	}
	return Info{Key: key, Size: info.Size, ModTime: info.LastModified}, nil
}

func (s *s3Store) List(ctx context.Context, prefix string) ([]string, error) {
	if err := validatePrefix(prefix); err != nil {
		return nil, invalidKey("list", prefix, s.url, err)
	}
	var keys []string
	for info := range s.client.ListObjectsIter(ctx, s.bucket, minio.ListObjectsOptions{Prefix: s.base + prefix, Recursive: true}) {
		if info.Err != nil {
			return nil, keyErr("list", prefix, s.url, info.Err)
		}
		key, ok := strings.CutPrefix(info.Key, s.base)
		// Skip "folder" marker objects some tools create ("dir/").
		if ok && ValidateKey(key) == nil {
			keys = append(keys, key)
		}
	}
	slices.Sort(keys)
	return keys, nil
}

func (s *s3Store) Delete(ctx context.Context, key string) error {
	obj, err := s.object("delete", key)
	if err != nil {
		return err
	}
	// S3 DELETE of a missing key succeeds, matching the interface.
	if err := s.client.RemoveObject(ctx, s.bucket, obj, minio.RemoveObjectOptions{}); err != nil && !isNotFound(err) {
		return keyErr("delete", key, s.url, err)
	}
	return nil
}
