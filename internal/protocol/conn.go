package protocol

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/msjfarm/msjfarm/internal/redact"
)

// ConnOptions says how to reach NATS.
type ConnOptions struct {
	URL      string // nats://host:port (comma-separated for a cluster)
	Name     string // client name shown by the server
	User     string
	Password string
	Token    string // authentication token (also accepted as nats://TOKEN@host)
	NKeyFile string // nkey seed file
	Creds    string // JWT credentials file
	TLSCA    string // CA certificate (PEM) to verify the server
	TLSCert  string // client certificate (PEM), with TLSKey
	TLSKey   string
	// InProcess, if set, connects to this server in the same process
	// through an in-memory pipe instead of a TCP socket (URL is then only
	// the name shown in messages).
	InProcess nats.InProcessConnProvider
}

// Connect dials NATS with the options; it retries the first connection for
// up to 10 s so that processes started together (compose) find the server,
// and reconnects forever afterwards. A refusal that no retry can cure —
// wrong credentials, a server certificate that does not verify, a missing
// client certificate, TLS required on one side only — fails at once, with
// an error that names the server (its URL with credentials masked) and the
// cause; no error or message ever contains a token or password.
func Connect(o ConnOptions) (*nats.Conn, error) {
	if o.URL == "" {
		return nil, errors.New("no NATS URL")
	}
	if err := checkURLs(o.URL); err != nil {
		return nil, err
	}
	if o.Password != "" && o.User == "" {
		// nats.go sent the password with an empty user, and the server
		// answered only "Authorization Violation"; a user alone in the
		// URL (nats://farm@host) is read as a token.
		return nil, errors.New("a NATS password needs its user: give --nats-user (MSJFARM_NATS_USER) with --nats-password, or both in the URL, user and password before the host")
	}
	opts := []nats.Option{
		nats.Name(o.Name),
		nats.MaxReconnects(-1),
		nats.ReconnectWait(500 * time.Millisecond),
		nats.RetryOnFailedConnect(false),
		nats.Timeout(5 * time.Second),
	}
	if o.InProcess != nil {
		opts = append(opts, nats.InProcessServer(o.InProcess))
	}
	n := 0
	if o.User != "" || o.Password != "" {
		opts = append(opts, nats.UserInfo(o.User, o.Password))
		n++
	}
	if o.Token != "" {
		opts = append(opts, nats.Token(o.Token))
		n++
	}
	if o.NKeyFile != "" {
		opt, err := nats.NkeyOptionFromSeed(o.NKeyFile)
		if err != nil {
			return nil, fmt.Errorf("nkey seed file: %w", err)
		}
		opts = append(opts, opt)
		n++
	}
	if o.Creds != "" {
		opts = append(opts, nats.UserCredentials(o.Creds))
		n++
	}
	if n > 1 {
		return nil, errors.New("give one of a token, user/password, an nkey seed file or a creds file")
	}
	if o.TLSCA != "" {
		opts = append(opts, nats.RootCAs(o.TLSCA))
	}
	if (o.TLSCert == "") != (o.TLSKey == "") {
		return nil, errors.New("a TLS client certificate needs both cert and key")
	}
	if o.TLSCert != "" {
		opts = append(opts, nats.ClientCert(o.TLSCert, o.TLSKey))
	}
	var err error
	deadline := time.Now().Add(10 * time.Second)
	for {
		var nc *nats.Conn
		nc, err = nats.Connect(o.URL, opts...)
		if err == nil {
			return nc, nil
		}
		hint, permanent := connFailure(err)
		if permanent || time.Now().After(deadline) {
			return nil, &ConnError{Server: redact.URL(o.URL), Err: err, Hint: hint,
				secrets: []string{o.Token, o.Password}}
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// checkURLs refuses a NATS URL (or one of a comma-separated list) that
// does not parse, without repeating it: nats.go's error quotes the URL
// whole, password and all, and its reason quotes a piece of it ("invalid
// port \":ab+cd\" after host" for a base64 password).
func checkURLs(list string) error {
	for _, raw := range strings.Split(list, ",") {
		raw = strings.TrimSpace(raw)
		parsed := raw
		if !strings.Contains(raw, "://") {
			parsed = "nats://" + raw // nats.go's reading of host:port
		}
		// An '@' after the host: a password or token holding '/' and
		// '@' parses as a host and a path ("nats://farm:hunter2@corp/
		// 2024x@h" as host "corp"), which was looked up in the DNS and
		// printed with the rest of the password.
		if u, err := url.Parse(parsed); err == nil && !strings.Contains(u.Path+u.RawQuery+u.Fragment, "@") {
			if scheme, _, ok := strings.Cut(raw, "://"); ok && !slices.Contains(natsSchemes, strings.ToLower(u.Scheme)) {
				return fmt.Errorf("the NATS URL %s: scheme %q is not NATS's (want nats://, tls://, ws:// or wss://; an http:// address is a web server's, MinIO's or a live page's)",
					redact.URL(raw), scheme)
			}
			continue
		}
		shown := "…"
		if scheme, _, ok := strings.Cut(raw, "://"); ok && schemeRE.MatchString(scheme) {
			shown = scheme + "://…"
		}
		return fmt.Errorf("the NATS URL (%s) does not parse as a URL; it is not repeated here, since it may hold a secret: "+
			"a password or token holding '/', '@', '%%' or a space must be percent-encoded in the URL, or given as --nats-password or --nats-token "+
			"(MSJFARM_NATS_PASSWORD, MSJFARM_NATS_TOKEN)", shown)
	}
	return nil
}

// natsSchemes are the URL schemes nats.go connects with.
var natsSchemes = []string{"nats", "tls", "ws", "wss"}

// schemeRE is a URL scheme short enough to show.
var schemeRE = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9+.-]{0,15}$`)

// ConnError is a failed first connection to NATS.
type ConnError struct {
	Server  string // the URL, credentials masked
	Err     error
	Hint    string // what to check, "" if nothing specific
	secrets []string
}

func (e *ConnError) Error() string {
	msg := "connecting to NATS at " + e.Server + ": " + redact.Text(e.Err.Error(), e.secrets...)
	if e.Hint != "" {
		msg += " (" + e.Hint + ")"
	}
	return msg
}

func (e *ConnError) Unwrap() error { return e.Err }

// connFailure says whether a connection error is permanent (retrying
// cannot help) and what to check.
func connFailure(err error) (hint string, permanent bool) {
	var (
		unknownCA  x509.UnknownAuthorityError
		hostname   x509.HostnameError
		invalid    x509.CertificateInvalidError
		verifyErr  *tls.CertificateVerificationError
		alert      tls.AlertError
		recordErr  tls.RecordHeaderError
		handshake  = strings.Contains(err.Error(), "tls: ")
		authFailed = errors.Is(err, nats.ErrAuthorization) || errors.Is(err, nats.ErrAuthExpired) ||
			errors.Is(err, nats.ErrAuthRevoked) || errors.Is(err, nats.ErrAccountAuthExpired)
	)
	switch {
	case authFailed:
		return "the server refused the credentials: check --nats-token, --nats-user/--nats-password, " +
			"--nats-creds/--nats-nkey or the user:password@ / token@ part of --nats-url", true
	case errors.As(err, &unknownCA):
		return "the server's certificate is not signed by a trusted CA: give the CA that signed it with --nats-ca (or --ca)", true
	case errors.As(err, &hostname):
		return "the server's certificate does not name the host in --nats-url", true
	case errors.As(err, &invalid), errors.As(err, &verifyErr):
		return "the server's certificate does not verify (expired, or not a server certificate?)", true
	case errors.Is(err, nats.ErrSecureConnRequired):
		return "the server requires TLS: give --nats-ca (or use tls:// in --nats-url)", true
	case errors.Is(err, nats.ErrSecureConnWanted):
		return "TLS was asked for (--nats-ca/--nats-cert or tls://) but the server does not offer it", true
	case errors.Is(err, nats.ErrClientCertOrRootCAsRequired), errors.As(err, &recordErr):
		return "the server requires TLS client options, or is not a TLS server", true
	case errors.As(err, &alert), handshake && (strings.Contains(err.Error(), "certificate required") ||
		strings.Contains(err.Error(), "bad certificate") || strings.Contains(err.Error(), "unknown certificate")):
		return "the server rejected the TLS handshake: it may require a client certificate (--nats-cert/--nats-key) " +
			"signed by a CA it trusts", true
	}
	if ne, ok := errors.AsType[net.Error](err); ok && ne.Timeout() || strings.Contains(err.Error(), "expected 'INFO'") {
		// A web server (MinIO's port, the live page) accepts the
		// connection and waits for a request: the client timed out
		// with a bare "i/o timeout".
		return "the server took the connection but sent no NATS greeting: is this a NATS port, not MinIO's or a web server's?", false
	}
	return "", false
}

// EmbeddedOptions configures an in-process JetStream server.
type EmbeddedOptions struct {
	// Listen is host:port; "" means 127.0.0.1 on a random port.
	Listen string
	// StoreDir holds JetStream's files (streams, KV); required.
	StoreDir string
	User     string // optional client authentication
	Password string
	Token    string // optional client authentication, instead of User/Password
	// TLSCert and TLSKey enable TLS; TLSCA additionally requires and
	// verifies client certificates.
	TLSCert, TLSKey, TLSCA string
	// Logs enables the server's log on stderr.
	Logs bool
}

// StartEmbedded starts a JetStream-enabled nats-server inside this process
// and returns it with its client URL. Shut it down with
// s.Shutdown(); s.WaitForShutdown().
func StartEmbedded(o EmbeddedOptions) (*server.Server, string, error) {
	if o.StoreDir == "" {
		return nil, "", errors.New("embedded NATS: a store directory is required")
	}
	host, port := "127.0.0.1", -1
	if o.Listen != "" {
		h, p, err := net.SplitHostPort(o.Listen)
		if err != nil {
			return nil, "", fmt.Errorf("embedded NATS: listen address %q: %w", o.Listen, err)
		}
		if host = h; host == "" {
			host = "0.0.0.0"
		}
		if port, err = strconv.Atoi(p); err != nil {
			return nil, "", fmt.Errorf("embedded NATS: port %q: %w", p, err)
		}
		if port == 0 {
			port = -1
		}
		if port < -1 || port > 65535 {
			return nil, "", fmt.Errorf("embedded NATS: listen address %q: port %d is not in 0..65535", o.Listen, port)
		}
		if port > 0 {
			// Bound and let go first: a busy port made the server wait
			// its 30 s and say only "not ready", the cause in its log.
			l, err := net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(port)))
			if err != nil {
				return nil, "", fmt.Errorf("embedded NATS: listen address %q: %w", o.Listen, err)
			}
			_ = l.Close()
		}
	}
	if o.Token != "" && (o.User != "" || o.Password != "") {
		return nil, "", errors.New("embedded NATS: give a token or a user and password, not both")
	}
	if err := os.MkdirAll(o.StoreDir, 0o755); err != nil {
		return nil, "", err
	}
	hold, err := lockStoreDir(o.StoreDir)
	if err != nil {
		return nil, "", err
	}
	opts := &server.Options{
		ServerName: "msjfarm-embedded",
		Host:       host,
		Port:       port,
		JetStream:  true,
		StoreDir:   o.StoreDir,
		NoSigs:     true,
		NoLog:      !o.Logs,
		MaxPayload: 8 << 20,
		Username:   o.User,
		Password:   o.Password,
		// A token-only server: nats-server compares it to the client's
		// auth_token (nats.Token or nats://TOKEN@host).
		Authorization: o.Token,
	}
	if o.TLSCert != "" {
		tc, err := server.GenTLSConfig(&server.TLSConfigOpts{CertFile: o.TLSCert, KeyFile: o.TLSKey, CaFile: o.TLSCA, Verify: o.TLSCA != ""})
		if err != nil {
			return nil, "", fmt.Errorf("embedded NATS: TLS: %w", err)
		}
		tc.MinVersion = tls.VersionTLS12
		opts.TLSConfig, opts.TLS, opts.TLSVerify = tc, true, o.TLSCA != ""
	}
	s, err := server.NewServer(opts)
	if err != nil {
		return nil, "", fmt.Errorf("embedded NATS: %w", err)
	}
	if o.Logs {
		s.ConfigureLogger()
	}
	hold(s)
	go s.Start()
	if !s.ReadyForConnections(30 * time.Second) {
		s.Shutdown()
		return nil, "", errors.New("embedded NATS: not ready after 30 s")
	}
	url := s.ClientURL()
	if host == "0.0.0.0" || host == "::" {
		url = fmt.Sprintf("nats://127.0.0.1:%d", s.Addr().(*net.TCPAddr).Port)
	}
	return s, url, nil
}

// StopEmbedded shuts an embedded server down once its clients are gone.
// JetStream is stopped first, the normal way (state flushed), so that
// Shutdown does not signal pull requests still pending from the closed
// clients and then sleep 50 ms for that signal to leave the server.
func StopEmbedded(s *server.Server) {
	_ = s.ShutdownJetStream()
	s.Shutdown()
	s.WaitForShutdown()
}
