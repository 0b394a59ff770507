package protocol

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
)

// ConnOptions says how to reach NATS.
type ConnOptions struct {
	URL      string // nats://host:port (comma-separated for a cluster)
	Name     string // client name shown by the server
	User     string
	Password string
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
// and reconnects forever afterwards.
func Connect(o ConnOptions) (*nats.Conn, error) {
	if o.URL == "" {
		return nil, errors.New("no NATS URL")
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
		return nil, errors.New("give one of user/password, an nkey seed file or a creds file")
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
		if time.Now().After(deadline) || errors.Is(err, nats.ErrAuthorization) {
			return nil, fmt.Errorf("connecting to %s: %w", o.URL, err)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// EmbeddedOptions configures an in-process JetStream server.
type EmbeddedOptions struct {
	// Listen is host:port; "" means 127.0.0.1 on a random port.
	Listen string
	// StoreDir holds JetStream's files (streams, KV); required.
	StoreDir string
	User     string // optional client authentication
	Password string
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
	}
	if err := os.MkdirAll(o.StoreDir, 0o755); err != nil {
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
