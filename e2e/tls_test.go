package e2e_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/msjfarm/msjfarm/internal/procutil"
	"github.com/msjfarm/msjfarm/storage"
	"github.com/msjfarm/msjfarm/storage/miniotest"
)

// pki is a test certificate authority with a server certificate for
// 127.0.0.1/localhost and a client certificate, all made fresh by the test
// (no private key is committed), plus an unrelated CA that trusts nothing
// of ours.
type pki struct {
	dir                                        string
	ca, serverCert, serverKey, clientCert, key string
	rogueCA                                    string
}

func newPKI(t *testing.T) *pki {
	t.Helper()
	dir := t.TempDir()
	p := &pki{dir: dir, ca: filepath.Join(dir, "ca.pem"), serverCert: filepath.Join(dir, "server.pem"),
		serverKey: filepath.Join(dir, "server.key"), clientCert: filepath.Join(dir, "client.pem"),
		key: filepath.Join(dir, "client.key"), rogueCA: filepath.Join(dir, "rogue-ca.pem")}
	serial := int64(1)
	newKey := func() *ecdsa.PrivateKey {
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	write := func(path, typ string, der []byte) {
		if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	writeKey := func(path string, k *ecdsa.PrivateKey) {
		der, err := x509.MarshalPKCS8PrivateKey(k)
		if err != nil {
			t.Fatal(err)
		}
		write(path, "PRIVATE KEY", der)
	}
	makeCA := func(name string) (*x509.Certificate, *ecdsa.PrivateKey, []byte) {
		k := newKey()
		serial++
		tmpl := &x509.Certificate{SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: name},
			NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
			IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &k.PublicKey, k)
		if err != nil {
			t.Fatal(err)
		}
		c, err := x509.ParseCertificate(der)
		if err != nil {
			t.Fatal(err)
		}
		return c, k, der
	}
	ca, caKey, caDER := makeCA("msjfarm test CA")
	write(p.ca, "CERTIFICATE", caDER)
	_, _, rogueDER := makeCA("some other CA")
	write(p.rogueCA, "CERTIFICATE", rogueDER)
	leaf := func(certPath, keyPath, cn string, usage x509.ExtKeyUsage, server bool) {
		k := newKey()
		serial++
		tmpl := &x509.Certificate{SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: cn},
			NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
			KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{usage}}
		if server {
			tmpl.DNSNames = []string{"localhost"}
			tmpl.IPAddresses = []net.IP{net.ParseIP("127.0.0.1")}
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &k.PublicKey, caKey)
		if err != nil {
			t.Fatal(err)
		}
		write(certPath, "CERTIFICATE", der)
		writeKey(keyPath, k)
	}
	leaf(p.serverCert, p.serverKey, "localhost", x509.ExtKeyUsageServerAuth, true)
	leaf(p.clientCert, p.key, "msjfarm-client", x509.ExtKeyUsageClientAuth, false)
	return p
}

func (p *pki) tlsConfig(t *testing.T) *tls.Config {
	t.Helper()
	b, err := os.ReadFile(p.ca)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(b)
	return &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
}

// startTLSNATS runs a real nats-server with JetStream that requires TLS
// with client certificates signed by p's CA (mTLS) and authenticates
// clients by auth, a nats-server `authorization` block. It returns the
// port; the server stops when the test ends.
func startTLSNATS(t *testing.T, p *pki, auth string, connect ...nats.Option) int {
	t.Helper()
	bin := natsServerBinary(t)
	port, err := procutil.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	conf := filepath.Join(dir, "nats.conf")
	if err := os.WriteFile(conf, fmt.Appendf(nil, `listen: "127.0.0.1:%d"
server_name: "msjfarm-tls"
jetstream { store_dir: %q }
tls {
  cert_file: %q
  key_file: %q
  ca_file: %q
  verify: true
  timeout: 2
}
authorization { %s }
`, port, filepath.Join(dir, "js"), p.serverCert, p.serverKey, p.ca, auth), 0o600); err != nil {
		t.Fatal(err)
	}
	logs, exited := startLogged(t, "nats-server", exec.Command(bin, "-c", conf), 5*time.Second)
	url := fmt.Sprintf("nats://127.0.0.1:%d", port)
	opts := append([]nats.Option{nats.Secure(p.tlsConfig(t)), nats.ClientCert(p.clientCert, p.key), nats.Timeout(time.Second)}, connect...)
	waitFor(t, "the TLS nats-server", 20*time.Second, func() bool {
		select {
		case <-exited:
			t.Fatalf("nats-server exited:\n%s", logs.String())
		default:
		}
		nc, err := nats.Connect(url, opts...)
		if err != nil {
			return false
		}
		defer nc.Close()
		js, _ := nc.JetStream()
		_, err = js.AccountInfo()
		return err == nil
	})
	return port
}

// startTLSMinIO runs a real MinIO serving HTTPS with p's server
// certificate (MinIO reads public.crt and private.key from --certs-dir),
// with the given root credentials. It returns the endpoint host:port.
func startTLSMinIO(t *testing.T, p *pki, accessKey, secretKey string) string {
	t.Helper()
	bin := miniotest.Binary()
	if bin == "" {
		if os.Getenv(miniotest.EnvRequireServers) == "1" {
			t.Fatal("MinIO binary not found")
		}
		t.Skip("MinIO binary not found: set " + miniotest.EnvBinary)
	}
	dir := t.TempDir()
	certs := filepath.Join(dir, "certs")
	if err := os.MkdirAll(certs, 0o700); err != nil {
		t.Fatal(err)
	}
	for src, dst := range map[string]string{p.serverCert: "public.crt", p.serverKey: "private.key"} {
		b, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(certs, dst), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	endpoint := freeAddr(t)
	cmd := exec.Command(bin, "server", "--quiet", "--address", endpoint, "--certs-dir", certs, filepath.Join(dir, "data"))
	cmd.Env = append(os.Environ(), "MINIO_ROOT_USER="+accessKey, "MINIO_ROOT_PASSWORD="+secretKey,
		"MINIO_BROWSER=off", "MINIO_UPDATE=off", "MINIO_CI_CD=1")
	logs, exited := startLogged(t, "minio", cmd, 5*time.Second)
	client := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{TLSClientConfig: p.tlsConfig(t)}}
	waitFor(t, "MinIO over HTTPS", 60*time.Second, func() bool {
		select {
		case <-exited:
			t.Fatalf("minio exited:\n%s", logs.String())
		default:
		}
		resp, err := client.Get("https://" + endpoint + "/minio/health/ready")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == 200
	})
	return endpoint
}

// TestTLSFarm runs whole campaigns — a coordinator and two worker
// processes of the built binary, a submit with --wait — against a real
// nats-server that requires TLS with client certificates (mTLS) and a real
// MinIO over HTTPS, both with certificates of a CA made by the test, once
// with a NATS token and once with a NATS user and password. Each campaign
// must complete; then every stored object, every line the processes
// printed, the report and the /metrics pages must be free of the NATS
// token or password and of the S3 keys; and wrong credentials (bad token,
// bad password, an untrusted CA, no client certificate) must each make a
// worker or a submit exit non-zero within 10 s with an error that names
// the server, credentials masked, and the cause.
func TestTLSFarm(t *testing.T) {
	t.Parallel() // its own servers and processes; it mostly waits on them (docs/testing.md)
	p := newPKI(t)
	for _, mode := range []string{"token", "password"} {
		t.Run(mode, func(t *testing.T) { tlsFarm(t, p, mode) })
	}
}

func tlsFarm(t *testing.T, p *pki, mode string) {
	const (
		token    = "Tok-e2e-5b8d1f0c7a93"
		password = "Pw-e2e-c41e9a7d02b6"
		s3Access = "msjfarm-ak-93e1c7"
		s3Secret = "S3secret-e2e-7d20b4e6a1f9"
	)
	secrets := map[string]string{"NATS token": token, "NATS password": password, "S3 access key": s3Access, "S3 secret key": s3Secret}
	var auth, masked string
	var check nats.Option
	if mode == "token" {
		auth, masked, check = fmt.Sprintf("token: %q", token), "nats://xxxxx@127.0.0.1:", nats.Token(token)
	} else {
		auth, masked, check = fmt.Sprintf("users: [{user: farm, password: %q}]", password), "nats://farm:xxxxx@127.0.0.1:", nats.UserInfo("farm", password)
	}
	port := startTLSNATS(t, p, auth, check)
	endpoint := startTLSMinIO(t, p, s3Access, s3Secret)
	host := fmt.Sprintf("127.0.0.1:%d", port)
	plainURL := "nats://" + host
	dir := t.TempDir()
	storeURL := "s3://tls-" + mode + "?endpoint=" + endpoint // secure (https) is the default
	base := append(os.Environ(), "MSJFARM_STORAGE="+storeURL, "MSJFARM_S3_ACCESS_KEY="+s3Access, "MSJFARM_S3_SECRET_KEY="+s3Secret)

	// The coordinator gets the credentials in its URL (printed masked),
	// the workers from the environment and the submit from a config
	// file: every way a secret can come in.
	var coURL string
	workerEnv := append([]string{}, base...)
	cfg := filepath.Join(dir, "submit.yaml")
	if mode == "token" {
		coURL = "nats://" + token + "@" + host
		workerEnv = append(workerEnv, "MSJFARM_NATS_TOKEN="+token)
		writeFile(t, cfg, "nats-token: "+token+"\n")
	} else {
		coURL = "nats://farm:" + password + "@" + host
		workerEnv = append(workerEnv, "MSJFARM_NATS_USER=farm", "MSJFARM_NATS_PASSWORD="+password)
		writeFile(t, cfg, "nats-user: farm\nnats-password: "+password+"\n")
	}
	mtls := []string{"--nats-cert", p.clientCert, "--nats-key", p.key}
	type proc struct {
		name string
		out  *procutil.Buffer
	}
	var procs []proc
	start := func(name string, env []string, args ...string) *exec.Cmd {
		cmd := exec.Command(bin, args...)
		cmd.Env = env
		out, _ := startLogged(t, name, cmd, 10*time.Second)
		procs = append(procs, proc{name, out})
		return cmd
	}
	coAddr, w1Addr, w2Addr := freeAddr(t), freeAddr(t), freeAddr(t)
	start("coordinator", base, append([]string{"coordinator", "--nats-url", coURL, "--ca", p.ca, "--http", coAddr, "-v"}, mtls...)...)
	// One worker names the two CAs separately, the other shares --ca.
	start("worker1", workerEnv, append([]string{"worker", "--nats-url", plainURL, "--nats-ca", p.ca, "--s3-ca", p.ca,
		"--workers", "2", "--runner", "inprocess", "--metrics", w1Addr, "-v", "--log-format", "json"}, mtls...)...)
	start("worker2", workerEnv, append([]string{"worker", "--nats-url", plainURL, "--ca", p.ca,
		"--workers", "2", "--runner", "inprocess", "--metrics", w2Addr, "-v"}, mtls...)...)

	sw := filepath.Join(dir, "s.yaml")
	const tasks = 8
	writeFile(t, sw, `name: tls-farm
seed: 5
workload: one-or-all
axes:
  arrival_rate: [1, 2]
policies: [fcfs, msf]
replications: 2
run: {arrivals: 5e3, warmup: 5e2, deadline: 5m}
`)
	submit := exec.Command(bin, append([]string{"submit", "--config", cfg, "--nats-url", plainURL, "--ca", p.ca, "--wait", sw}, mtls...)...)
	submit.Env = base
	subOut, err := submit.CombinedOutput()
	if err != nil {
		t.Fatalf("submit: %v\n%s", err, subOut)
	}
	m := regexp.MustCompile(`campaign ([0-9a-f]+) `).FindSubmatch(subOut)
	if m == nil {
		t.Fatalf("no campaign id in %s", subOut)
	}
	id := string(m[1])

	coPage := "http://" + coAddr + "/"
	var camp struct {
		State  string `json:"state"`
		Done   int    `json:"done"`
		Failed int    `json:"failed"`
		Report string `json:"report"`
	}
	waitFor(t, "the campaign's report", 60*time.Second, func() bool {
		_, body := httpGetQuiet(coPage + "api/campaigns/" + id)
		return json.Unmarshal([]byte(body), &camp) == nil && camp.Report != ""
	})
	if camp.State != "done" || camp.Done != tasks || camp.Failed != 0 {
		t.Fatalf("campaign %+v, want done with %d tasks", camp, tasks)
	}

	// Everything that could leak, by where it came from.
	texts := map[string]string{"submit output": string(subOut)}
	for _, cmdArgs := range [][]string{append([]string{"status", id, "--nats-url", coURL, "--ca", p.ca}, mtls...),
		{"results", id, "--s3-ca", p.ca}} {
		c := exec.Command(bin, cmdArgs...)
		c.Env = base
		out, err := c.CombinedOutput()
		if err != nil {
			t.Fatalf("msjfarm %s: %v\n%s", cmdArgs[0], err, out)
		}
		texts["msjfarm "+cmdArgs[0]+" output"] = string(out)
	}
	for _, u := range []string{coPage + "metrics", coPage + "api/campaigns", coPage + "api/campaigns/" + id,
		"http://" + coAddr + camp.Report, "http://" + w1Addr + "/metrics", "http://" + w2Addr + "/metrics"} {
		code, body := httpGetQuiet(u)
		if code != 200 {
			t.Fatalf("GET %s: %d %s", u, code, body)
		}
		texts["GET "+u] = body
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	st, err := storage.Open(ctx, storeURL, storage.WithCredentials(s3Access, s3Secret), storage.WithCA(p.ca))
	if err != nil {
		t.Fatal(err)
	}
	keys, err := st.List(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	var results, report int
	for _, k := range keys {
		b, err := st.Get(ctx, k)
		if err != nil {
			t.Fatalf("%s: %v", k, err)
		}
		texts["stored "+k] = string(b)
		if strings.HasPrefix(k, storage.ResultsPrefix(id)) {
			results++
		}
		if strings.HasPrefix(k, storage.ReportPrefix(id)) {
			report++
		}
	}
	if results != tasks || report == 0 || texts["stored "+storage.ManifestKey(id)] == "" {
		t.Fatalf("storage holds %d results (want %d), %d report files and manifest %v: %v", results, tasks, report,
			texts["stored "+storage.ManifestKey(id)] != "", keys)
	}
	for _, pr := range procs {
		texts[pr.name+" output"] = pr.out.String()
	}
	// The start-up lines name the server, with the credentials masked.
	if !strings.Contains(texts["coordinator output"], "ready (NATS "+masked) {
		t.Errorf("the coordinator's start-up line does not show %s…:\n%s", masked, texts["coordinator output"])
	}
	if !strings.Contains(texts["worker2 output"], "NATS "+plainURL) {
		t.Errorf("worker2's start-up line does not name %s", plainURL)
	}
	for where, text := range texts {
		for what, secret := range secrets {
			if strings.Contains(text, secret) {
				t.Errorf("%s contains the %s", where, what)
			}
		}
	}
	t.Logf("%s: %d tasks done over TLS NATS (mTLS) and HTTPS MinIO; %d stored objects, %d process outputs and %d pages free of secrets",
		mode, tasks, len(keys), len(procs)+3, 6)

	// Wrong credentials: a clear error naming the server, within 10 s.
	// (--s3-ca is given to the NATS cases: submit and worker open the
	// store first; the last cases are an untrusted S3 endpoint.)
	type badCase struct {
		name string
		args []string
		env  []string
		want []string // in the output
	}
	var cases []badCase
	if mode == "token" {
		cases = append(cases,
			badCase{"bad token flag", []string{"--nats-url", plainURL, "--nats-token", "Wrong-tok-1c2d", "--ca", p.ca}, nil,
				[]string{plainURL, "uthorization", "refused the credentials"}},
			badCase{"bad token in URL", []string{"--nats-url", "nats://Wrong-tok-1c2d@" + host, "--ca", p.ca}, nil,
				[]string{"nats://xxxxx@" + host, "refused the credentials"}},
			badCase{"bad token env", []string{"--nats-url", plainURL, "--ca", p.ca}, []string{"MSJFARM_NATS_TOKEN=Wrong-tok-1c2d"},
				[]string{plainURL, "refused the credentials"}},
		)
	} else {
		cases = append(cases,
			badCase{"bad password in URL", []string{"--nats-url", "nats://farm:Wrong-pw-1c2d@" + host, "--ca", p.ca}, nil,
				[]string{"nats://farm:xxxxx@" + host, "refused the credentials"}},
			badCase{"bad password flag", []string{"--nats-url", plainURL, "--nats-user", "farm", "--nats-password", "Wrong-pw-1c2d", "--ca", p.ca}, nil,
				[]string{plainURL, "refused the credentials"}},
		)
	}
	good := "--nats-token=" + token
	if mode == "password" {
		good = "--nats-password=" + password
	}
	cases = append(cases,
		badCase{"untrusted CA", []string{"--nats-url", plainURL, good, "--nats-user=" + userOf(mode), "--nats-ca", p.rogueCA, "--s3-ca", p.ca}, nil,
			[]string{plainURL, "not signed by a trusted CA"}},
		badCase{"no CA", []string{"--nats-url", plainURL, good, "--nats-user=" + userOf(mode), "--s3-ca", p.ca}, nil,
			[]string{plainURL, "not signed by a trusted CA"}},
	)
	for i := range cases {
		cases[i].args = append(cases[i].args, mtls...)
	}
	cases = append(cases, badCase{"no client certificate", []string{"--nats-url", plainURL, good, "--nats-user=" + userOf(mode), "--ca", p.ca}, nil,
		[]string{plainURL, "client certificate"}})
	// An S3 endpoint whose certificate the given CA did not sign: the
	// store is opened before NATS, by submit and worker alike (cases at an
	// odd and an even index: both commands).
	for range 2 {
		cases = append(cases, badCase{"untrusted S3 CA", append([]string{"--nats-url", plainURL, good, "--nats-user=" + userOf(mode),
			"--nats-ca", p.ca, "--s3-ca", p.rogueCA}, mtls...), nil, []string{endpoint, "certificate"}})
	}
	for i, c := range cases {
		cmdName := []string{"worker", "submit"}[i%2]
		args := append([]string{cmdName}, c.args...)
		if cmdName == "submit" {
			args = append(args, sw)
		}
		cmd := exec.Command(bin, args...)
		cmd.Env = append(append([]string{}, base...), c.env...)
		begin := time.Now()
		out, err := runWithin(cmd, 20*time.Second)
		took := time.Since(begin)
		if err == nil {
			t.Errorf("%s: msjfarm %s exited 0:\n%s", c.name, cmdName, out)
			continue
		}
		if took > 10*time.Second {
			t.Errorf("%s: msjfarm %s took %v to fail, want ≤ 10 s", c.name, cmdName, took.Round(time.Millisecond))
		}
		for _, w := range c.want {
			if !strings.Contains(out, w) {
				t.Errorf("%s: msjfarm %s: %q not in the error:\n%s", c.name, cmdName, w, out)
			}
		}
		for what, secret := range map[string]string{"wrong secret": "Wrong-", "NATS token": token, "NATS password": password, "S3 secret key": s3Secret} {
			if strings.Contains(out, secret) {
				t.Errorf("%s: msjfarm %s prints the %s:\n%s", c.name, cmdName, what, out)
			}
		}
		t.Logf("%s: msjfarm %s failed in %v: %s", c.name, cmdName, took.Round(time.Millisecond), strings.TrimSpace(out))
	}
}

func userOf(mode string) string {
	if mode == "password" {
		return "farm"
	}
	return ""
}

func writeFile(t *testing.T, path, text string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
}

// runWithin runs cmd and returns its combined output, killing it after d.
func runWithin(cmd *exec.Cmd, d time.Duration) (string, error) {
	out := &procutil.Buffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		return "", err
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		return out.String(), err
	case <-time.After(d):
		_ = cmd.Process.Kill()
		<-done
		return out.String(), fmt.Errorf("still running after %v", d)
	}
}

// TestTLSEmbeddedCoordinator: the coordinator's embedded NATS server with
// TLS (its certificate from --nats-cert/--nats-key) and a token; the
// coordinator trusts its own server through --ca, a worker and a submit
// connect over TLS with the token from the environment, and the campaign
// completes. The token appears in no output.
func TestTLSEmbeddedCoordinator(t *testing.T) {
	p := newPKI(t)
	const token = "Tok-embedded-0e7f2a91c3"
	dir := t.TempDir()
	natsAddr := freeAddr(t)
	env := append(os.Environ(), "MSJFARM_STORAGE="+filepath.Join(dir, "store"), "MSJFARM_NATS_TOKEN="+token, "MSJFARM_CA="+p.ca)
	var outs []*procutil.Buffer
	for _, args := range [][]string{
		{"coordinator", "--listen", natsAddr, "--store-dir", filepath.Join(dir, "nats"), "--nats-cert", p.serverCert, "--nats-key", p.serverKey},
		{"worker", "--nats-url", "tls://" + natsAddr, "--workers", "2", "--runner", "inprocess"},
	} {
		cmd := exec.Command(bin, args...)
		cmd.Env = env
		out, _ := startLogged(t, args[0], cmd, 0)
		outs = append(outs, out)
		if args[0] == "coordinator" {
			waitFor(t, "the coordinator", 60*time.Second, func() bool { return strings.Contains(out.String(), "ready (NATS") })
		}
	}
	sw := filepath.Join(dir, "s.yaml")
	writeFile(t, sw, "name: tls-embedded\nseed: 2\nworkload: one-or-all\naxes:\n  arrival_rate: [1]\npolicies: [fcfs]\nreplications: 2\nrun: {arrivals: 2e3, warmup: 2e2, deadline: 5m}\n")
	submit := exec.Command(bin, "submit", "--nats-url", "nats://"+natsAddr, "--wait", sw)
	submit.Env = env
	out, err := runWithin(submit, 60*time.Second)
	if err != nil {
		t.Fatalf("submit: %v\n%s", err, out)
	}
	all := out
	for _, o := range outs {
		all += o.String()
	}
	if strings.Contains(all, token) {
		t.Errorf("the token is printed:\n%s", all)
	}
	if !strings.Contains(outs[1].String(), "NATS tls://"+natsAddr) {
		t.Errorf("the worker is not connected over tls://%s:\n%s", natsAddr, outs[1].String())
	}
}
