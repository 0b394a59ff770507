package main

import (
	"cmp"
	"errors"
	"github.com/spf13/pflag"

	"context"
	"fmt"
	"net/url"
	"os"
	"slices"
	"strings"

	"github.com/nats-io/nats.go"
	"github.com/spf13/viper"

	"github.com/msjfarm/msjfarm/internal/protocol"
	"github.com/msjfarm/msjfarm/internal/redact"
	"github.com/msjfarm/msjfarm/storage"
)

// farmFlags are the connection flags of the distributed commands. Every
// flag can also come from the environment (MSJFARM_<FLAG>, dashes as
// underscores: MSJFARM_NATS_URL, MSJFARM_STORAGE, MSJFARM_NATS_CREDS, ...)
// or from a YAML/TOML/JSON config file (--config or MSJFARM_CONFIG; keys are
// the flag names, e.g. `nats-url: nats://nats:4222`). A flag given on the
// command line wins over the environment, which wins over the file.
type farmFlags struct {
	fs       *pflag.FlagSet
	config   *string
	natsURL  *string
	user     *string
	password *string
	token    *string
	nkey     *string
	creds    *string
	tlsCA    *string
	tlsCert  *string
	tlsKey   *string
	ca       *string
	s3CA     *string
	storage  *string
	// s3Access and s3Secret are the S3 credentials when the config file
	// gives them (s3-access-key, s3-secret-key: credentialKeys; their
	// variables MSJFARM_S3_ACCESS_KEY and MSJFARM_S3_SECRET_KEY win over
	// the file); empty: storage.Open looks in the environment.
	s3Access, s3Secret string
	// configPath is the config file parse read ("": none).
	configPath string
}

// credentialKeys are config-file keys that are no flag: the S3
// credentials, which a flag would show to every user of the machine in
// ps. Without them a file could carry the NATS password but not the S3
// secret, and the key the documentation's table implies was refused as
// unknown.
var credentialKeys = []string{"s3-access-key", "s3-secret-key"}

func newFarmFlags(fs *pflag.FlagSet, withNATS bool, defaultStorage string) *farmFlags {
	f := &farmFlags{fs: fs}
	f.config = fs.String("config", "", "config file (YAML, TOML or JSON) with flag names as keys (env MSJFARM_CONFIG)")
	if withNATS {
		f.natsURL = fs.String("nats-url", "", "NATS server URL, e.g. nats://host:4222 (env MSJFARM_NATS_URL)")
		f.user = fs.String("nats-user", "", "NATS user name (with --nats-password)")
		f.password = fs.String("nats-password", "", "NATS password (env MSJFARM_NATS_PASSWORD; never printed)")
		f.token = fs.String("nats-token", "", "NATS authentication token, as nats://TOKEN@host would give it (env MSJFARM_NATS_TOKEN; never printed)")
		f.nkey = fs.String("nats-nkey", "", "NATS nkey seed file")
		f.creds = fs.String("nats-creds", "", "NATS credentials (JWT) file")
		f.tlsCA = fs.String("nats-ca", "", "CA certificate (PEM) that signed the NATS server's certificate (default --ca)")
		f.tlsCert = fs.String("nats-cert", "", "TLS client certificate (PEM) for NATS servers that verify clients (mTLS), with --nats-key")
		f.tlsKey = fs.String("nats-key", "", "TLS client key (PEM) of --nats-cert")
		// The earlier names: still read (flag, MSJFARM_TLS_CA, config
		// key), hidden from the help.
		for _, a := range [][2]string{{"tls-ca", "nats-ca"}, {"tls-cert", "nats-cert"}, {"tls-key", "nats-key"}} {
			target := map[string]*string{"nats-ca": f.tlsCA, "nats-cert": f.tlsCert, "nats-key": f.tlsKey}[a[1]]
			fs.StringVar(target, a[0], "", "old name of --"+a[1])
			_ = fs.MarkDeprecated(a[0], "use --"+a[1])
		}
	}
	f.ca = fs.String("ca", "", "CA certificate (PEM) trusted for both NATS and S3 over TLS, when --nats-ca or --s3-ca is not given")
	f.s3CA = fs.String("s3-ca", "", "CA certificate (PEM) that signed the S3 endpoint's certificate, for https endpoints with a private CA (default --ca; env MSJFARM_S3_CA)")
	f.storage = fs.String("storage", defaultStorage, "result store: a directory, file:///dir or s3://bucket?endpoint=host:port&secure=false (env MSJFARM_STORAGE)")
	return f
}

// natsCA is --nats-ca, else --ca.
func (f *farmFlags) natsCA() string {
	if *f.tlsCA != "" {
		return *f.tlsCA
	}
	return *f.ca
}

// storageOptions are the storage.Open options of the flags: the S3 CA
// and the credentials of the config file.
func (f *farmFlags) storageOptions() []storage.Option {
	var o []storage.Option
	if f.s3Access != "" {
		o = append(o, storage.WithCredentials(f.s3Access, f.s3Secret))
	}
	ca := *f.s3CA
	if ca == "" {
		ca = *f.ca
	}
	if ca != "" {
		o = append(o, storage.WithCA(ca))
	}
	return o
}

// processSecrets are the credentials this process was given; fail and the
// structured logger mask them wherever they appear.
var processSecrets []string

// secrets are the credential values given by flag, environment or config
// — the NATS password and token, also as written in --nats-url, and the S3
// secret keys of the environment — removed from anything the process
// prints (see redact.Text). Values shorter than minSecret are left to the
// URL masking alone: replacing a one- or two-letter string everywhere would
// garble every line.
func (f *farmFlags) secrets() []string {
	var s secretSet
	for _, p := range []*string{f.password, f.token} {
		if p != nil {
			s.add(*p)
		}
	}
	if f.natsURL != nil {
		s.addURL(*f.natsURL)
	}
	s.addEnv(os.Getenv)
	s.add(f.s3Secret)
	return s
}

// secretSet collects credential values, each once, none shorter than
// minSecret.
type secretSet []string

func (s *secretSet) add(v string) {
	if len(v) >= minSecret && !slices.Contains(*s, v) {
		*s = append(*s, v)
	}
}

// addURL adds the passwords and tokens of a (comma-separated) NATS URL.
func (s *secretSet) addURL(urls string) {
	for _, raw := range strings.Split(urls, ",") {
		raw = strings.TrimSpace(raw)
		if u, err := url.Parse(raw); err == nil && u.User != nil {
			if pw, ok := u.User.Password(); ok {
				s.add(pw)
			} else {
				s.add(u.User.Username()) // a token
			}
		} else if user, pw, ok := redact.Userinfo(raw); err != nil && ok {
			// A URL that does not parse (a password holding '/'):
			// its secret is still masked wherever it appears.
			s.add(cmp.Or(pw, user))
		}
	}
}

// addEnv adds the credentials of the environment.
func (s *secretSet) addEnv(getenv func(string) string) {
	for _, env := range []string{"MSJFARM_S3_SECRET_KEY", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "MINIO_ROOT_PASSWORD",
		"MSJFARM_NATS_PASSWORD", "MSJFARM_NATS_TOKEN"} {
		s.add(getenv(env))
	}
	s.addURL(getenv("MSJFARM_NATS_URL"))
}

// startSecrets are the credentials known before any command parses its
// flags: the environment's, and the values of the credential flags on the
// command line (--nats-password X, --nats-token=X, --nats-url with one).
// Errors found before or while the flags are parsed (a sweep path, a
// --config path, a bucket name, an unknown command) are printed through
// fail like any other, and a secret pasted where a path or name belongs
// was printed whole: "run: stat <the S3 secret key>: no such file".
func startSecrets(args []string, getenv func(string) string) []string {
	var s secretSet
	s.addEnv(getenv)
	for i, a := range args {
		name, val, eq := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if !strings.HasPrefix(a, "-") || !slices.Contains([]string{"nats-password", "nats-token", "nats-url"}, name) {
			continue
		}
		if !eq && i+1 < len(args) {
			val = args[i+1]
		}
		if name == "nats-url" {
			s.addURL(val)
		} else {
			s.add(val)
		}
	}
	return s
}

// minSecret is the shortest credential masked wherever it appears.
const minSecret = 4

// configFile is the command's config file as parse resolved it (--config,
// or else $MSJFARM_CONFIG; "": none).
func (f *farmFlags) configFile() string { return f.configPath }

// parse completes the flags cobra has parsed: viper, bound to them, gives
// each flag not on the command line its value from the environment or the
// config file (flag > environment > file > default), and that value is
// set on the flag so that the command reads one place.
func (f *farmFlags) parse() error {
	v := viper.New()
	v.SetEnvPrefix("MSJFARM")
	v.SetEnvKeyReplacer(strings.NewReplacer("-", "_"))
	v.AutomaticEnv()
	if err := v.BindPFlags(f.fs); err != nil {
		return err
	}
	f.configPath = v.GetString("config")
	if cfg := f.configPath; cfg != "" {
		v.SetConfigFile(cfg)
		err := checkConfigShape(cfg)
		if err == nil {
			err = v.ReadInConfig()
		}
		if err == nil {
			err = checkConfigKeys(cfg)
		}
		if err != nil {
			err = fmt.Errorf("config file %s: %w", cfg, err)
			errorf("%v", err)
			return err
		}
		warnReadableSecrets(cfg, v)
	}
	defer func() { processSecrets = append(processSecrets, f.secrets()...) }()
	warnPaddedCredentials(os.LookupEnv)
	if err := f.parseCredentials(v); err != nil {
		errorf("%v", err)
		return err
	}
	var err error
	f.fs.VisitAll(func(fl *pflag.Flag) {
		if fl.Changed || fl.Name == "config" || fl.Name == "help" || err != nil || !v.IsSet(fl.Name) {
			return
		}
		vals := []string{v.GetString(fl.Name)}
		if t := fl.Value.Type(); t == "stringArray" || t == "stringSlice" {
			// A repeatable flag's list in the config file (plugin-writable:
			// [a, b]): each item, where GetString made it "".
			if list, ok := v.Get(fl.Name).([]any); ok {
				vals = vals[:0]
				for _, e := range list {
					vals = append(vals, fmt.Sprint(e))
				}
			}
		}
		for _, val := range vals {
			if f.fs.Set(fl.Name, val) == nil {
				continue
			}
			// Named where it came from, in the sweep file's words: it was
			// `--workers (from environment or config): invalid argument
			// "many" for "--workers" flag: strconv.ParseInt: …`.
			src := envName(fl.Name)
			if _, env := os.LookupEnv(src); !env {
				src = "config file " + v.GetString("config") + ": " + fl.Name
			}
			err = fmt.Errorf("%s (--%s): %q is not %s", src, fl.Name, val, flagKind(fl.Value.Type()))
			errorf("%v", err)
			return
		}
	})
	if err == nil && f.storage != nil && *f.storage != "" {
		// Its form is checked here, a usage error (exit 2) before the
		// command starts; the store itself is opened by the command.
		if err = storage.CheckURL(*f.storage); err != nil {
			errorf("%v", err)
		}
	}
	return err
}

// parseCredentials reads the S3 credentials when the config file gives
// them (credentialKeys; the environment's MSJFARM_S3_* still win): both
// or neither, since half a pair is a mistake that the store would report
// as missing credentials, or answer with another pair of the environment
// (AWS_*). Without them in the file, the store reads the environment as
// it always did.
func (f *farmFlags) parseCredentials(v *viper.Viper) error {
	if !v.InConfig(credentialKeys[0]) && !v.InConfig(credentialKeys[1]) {
		return nil
	}
	f.s3Access, f.s3Secret = v.GetString(credentialKeys[0]), v.GetString(credentialKeys[1])
	if (f.s3Access == "") == (f.s3Secret == "") {
		return nil
	}
	given, missing := credentialKeys[0], credentialKeys[1]
	if f.s3Access == "" {
		given, missing = missing, given
	}
	src := envName(given)
	if _, env := os.LookupEnv(src); !env {
		src = "config file " + v.GetString("config") + ": " + given
	}
	f.s3Access, f.s3Secret = "", ""
	return fmt.Errorf("%s is given without %s (%s): S3 needs both", src, missing, envName(missing))
}

// credentialEnv are the variables holding credentials, checked for
// white space around them (warnPaddedCredentials).
var credentialEnv = []string{"MSJFARM_S3_ACCESS_KEY", "MSJFARM_S3_SECRET_KEY", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY",
	"MINIO_ROOT_USER", "MINIO_ROOT_PASSWORD", "MSJFARM_NATS_USER", "MSJFARM_NATS_PASSWORD", "MSJFARM_NATS_TOKEN"}

// warnPaddedCredentials warns of a credential variable that starts or
// ends with white space: a secret written to a file by echo, or a
// Kubernetes secret made from one, ends with a newline, and the server
// answered only "SignatureDoesNotMatch" or "Authorization Violation". It
// is used as it is (a password may hold a space); the warning names the
// variable, never its value.
func warnPaddedCredentials(lookup func(string) (string, bool)) {
	for _, name := range credentialEnv {
		if v, ok := lookup(name); ok && v != "" && v != strings.TrimSpace(v) {
			errorf("warning: %s starts or ends with white space (a newline from echo or a file?); it is used as it is, and the server may refuse it", name)
		}
	}
}

// secretKeys are the config-file keys that hold a credential.
var secretKeys = []string{"s3-secret-key", "nats-password", "nats-token"}

// warnReadableSecrets warns when the config file at path holds a
// credential (secretKeys, or a password or token in nats-url) and other
// users of the machine may read it, as ssh does of a private key: the
// documentation recommends the file for secrets because a flag shows in
// ps, which a world-readable file defeats just as well.
func warnReadableSecrets(path string, v *viper.Viper) {
	var held []string
	for _, k := range secretKeys {
		if v.InConfig(k) {
			held = append(held, k)
		}
	}
	if v.InConfig("nats-url") && strings.Contains(v.GetString("nats-url"), "@") {
		held = append(held, "nats-url")
	}
	fi, err := os.Stat(path)
	if len(held) == 0 || err != nil || fi.Mode().Perm()&0o077 == 0 {
		return
	}
	errorf("warning: config file %s holds credentials (%s) and other users may read it (mode %04o): chmod 600 it",
		path, strings.Join(held, ", "), fi.Mode().Perm())
}

// flagKind names what a flag of pflag type t holds.
func flagKind(t string) string {
	switch {
	case strings.HasPrefix(t, "int") || strings.HasPrefix(t, "uint"):
		return "a whole number"
	case strings.HasPrefix(t, "float"):
		return "a number"
	case t == "bool":
		return "true or false"
	case t == "duration":
		return `a duration like "30s" or "2m"`
	}
	return "a " + t
}

// lazyConn is conn made on first use: a submission connects only when it
// must ask the farm something (submitStore's lease read, the request
// itself), after its checks of the sweep; closeConn closes it if made.
func (f *farmFlags) lazyConn(name string) (conn func() (*nats.Conn, error), closeConn func()) {
	var nc *nats.Conn
	conn = func() (*nats.Conn, error) {
		if nc == nil {
			c, err := f.conn(name)
			if err != nil {
				return nil, err
			}
			nc = c
		}
		return nc, nil
	}
	return conn, func() {
		if nc != nil {
			nc.Close()
		}
	}
}

func (f *farmFlags) conn(name string) (*nats.Conn, error) {
	if *f.natsURL == "" {
		return nil, usageError{errors.New("no NATS server: give --nats-url (or MSJFARM_NATS_URL)")}
	}
	return protocol.Connect(protocol.ConnOptions{URL: *f.natsURL, Name: name, User: *f.user, Password: *f.password, Token: *f.token,
		NKeyFile: *f.nkey, Creds: *f.creds, TLSCA: f.natsCA(), TLSCert: *f.tlsCert, TLSKey: *f.tlsKey})
}

func (f *farmFlags) store(ctx context.Context) (storage.Store, error) {
	if *f.storage == "" {
		return nil, fmt.Errorf("no result store: give --storage (or MSJFARM_STORAGE)")
	}
	// One Open: it waits a few seconds for a server that is still
	// starting (storage.OpenTimeout) and otherwise fails at once with the
	// endpoint and the cause (connection refused, timed out, access
	// denied, bucket missing, untrusted certificate), rather than retrying
	// for a minute in silence. Compose starts msjfarm once the object
	// store reports healthy, and Kubernetes restarts a pod that exits.
	return storage.Open(ctx, *f.storage, f.storageOptions()...)
}

// errNoStore marks a result store that does not exist.
var errNoStore = errors.New("nothing stored")

// existingStore opens --storage for a command that only reads what is
// there (status, results, report, reproduce, gc): a store that does not
// exist is an error saying so — where a newcomer typing `msjfarm status`
// in the wrong directory used to get an empty ./msjfarm-data created and
// an empty table — and nothing is created.
func (f *farmFlags) existingStore(ctx context.Context) (storage.Store, error) {
	if *f.storage == "" {
		return nil, fmt.Errorf("no result store: give --storage (or MSJFARM_STORAGE)")
	}
	st, err := storage.Open(ctx, *f.storage, append(f.storageOptions(), storage.NoCreate())...)
	if errors.Is(err, storage.ErrNotFound) {
		return nil, fmt.Errorf("no results at %s: it does not exist (msjfarm run stores its campaigns there; give --storage or MSJFARM_STORAGE for another store, --nats-url for a farm): %w", *f.storage, errNoStore)
	}
	return st, err
}
