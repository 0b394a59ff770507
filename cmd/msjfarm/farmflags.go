package main

import (
	"github.com/spf13/pflag"

	"context"
	"fmt"
	"os"
	"strings"

	"github.com/nats-io/nats.go"
	"github.com/spf13/viper"

	"github.com/msjfarm/msjfarm/internal/protocol"
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
	nkey     *string
	creds    *string
	tlsCA    *string
	tlsCert  *string
	tlsKey   *string
	storage  *string
}

func newFarmFlags(fs *pflag.FlagSet, withNATS bool, defaultStorage string) *farmFlags {
	f := &farmFlags{fs: fs}
	f.config = fs.String("config", "", "config file (YAML, TOML or JSON) with flag names as keys (env MSJFARM_CONFIG)")
	if withNATS {
		f.natsURL = fs.String("nats-url", "", "NATS server URL, e.g. nats://host:4222 (env MSJFARM_NATS_URL)")
		f.user = fs.String("nats-user", "", "NATS user name (with --nats-password)")
		f.password = fs.String("nats-password", "", "NATS password")
		f.nkey = fs.String("nats-nkey", "", "NATS nkey seed file")
		f.creds = fs.String("nats-creds", "", "NATS credentials (JWT) file")
		f.tlsCA = fs.String("tls-ca", "", "CA certificate (PEM) that signed the NATS server's certificate")
		f.tlsCert = fs.String("tls-cert", "", "TLS client certificate (PEM)")
		f.tlsKey = fs.String("tls-key", "", "TLS client key (PEM)")
	}
	f.storage = fs.String("storage", defaultStorage, "result store: a directory, file:///dir or s3://bucket?endpoint=host:port&secure=false (env MSJFARM_STORAGE)")
	return f
}

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
	if cfg := v.GetString("config"); cfg != "" {
		v.SetConfigFile(cfg)
		if err := v.ReadInConfig(); err != nil {
			fmt.Fprintf(os.Stderr, "msjfarm: config file: %v\n", err)
			return fmt.Errorf("config file: %w", err)
		}
	}
	var err error
	f.fs.VisitAll(func(fl *pflag.Flag) {
		if fl.Changed || fl.Name == "config" || fl.Name == "help" || err != nil || !v.IsSet(fl.Name) {
			return
		}
		if e := f.fs.Set(fl.Name, v.GetString(fl.Name)); e != nil {
			err = fmt.Errorf("--%s (from environment or config): %w", fl.Name, e)
			fmt.Fprintf(os.Stderr, "msjfarm: %v\n", err)
		}
	})
	return err
}

func (f *farmFlags) conn(name string) (*nats.Conn, error) {
	if *f.natsURL == "" {
		return nil, fmt.Errorf("no NATS server: give --nats-url (or MSJFARM_NATS_URL)")
	}
	return protocol.Connect(protocol.ConnOptions{URL: *f.natsURL, Name: name, User: *f.user, Password: *f.password,
		NKeyFile: *f.nkey, Creds: *f.creds, TLSCA: *f.tlsCA, TLSCert: *f.tlsCert, TLSKey: *f.tlsKey})
}

func (f *farmFlags) store(ctx context.Context) (storage.Store, error) {
	if *f.storage == "" {
		return nil, fmt.Errorf("no result store: give --storage (or MSJFARM_STORAGE)")
	}
	// One Open: it waits a few seconds for a server that is still
	// starting (storage.OpenTimeout) and otherwise fails at once with the
	// endpoint and the cause (connection refused, timed out, access
	// denied, bucket missing), rather than retrying for a minute in
	// silence. Compose starts msjfarm once the object store reports
	// healthy, and Kubernetes restarts a pod that exits.
	return storage.Open(ctx, *f.storage)
}
