package main

import (
	"github.com/spf13/pflag"

	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/msjfarm/msjfarm/coordinator"
	"github.com/msjfarm/msjfarm/internal/scratch"
	"github.com/msjfarm/msjfarm/internal/termtext"
	"github.com/msjfarm/msjfarm/results/aggregate"
	"github.com/msjfarm/msjfarm/results/archive"
	"github.com/msjfarm/msjfarm/results/bundle"
	"github.com/msjfarm/msjfarm/results/report"
	"github.com/msjfarm/msjfarm/results/reproduce"
	"github.com/msjfarm/msjfarm/storage"
	"github.com/msjfarm/msjfarm/sweep"
	"github.com/msjfarm/msjfarm/worker/registry"
)

// archiveCommand is `msjfarm archive`: a campaign as one portable,
// verifiable file (results/bundle, docs/archive.md).
var archiveCommand = command{use: "archive COMMAND", short: "export a campaign as one verifiable .msjar file, verify one, import one into a store",
	long: "A campaign as one file (.msjar: tar + zstd or gzip): its sweep, manifest, every\n" +
		"result, summary, report, the plugin binaries and trace it pinned, a provenance\n" +
		"record, RO-Crate metadata and a CITATION.cff, with an index of every member's\n" +
		"sha256 and a Merkle root over them (optionally signed with ed25519). `msjfarm\n" +
		"reproduce FILE.msjar` and `msjfarm report FILE.msjar` read it with no farm and\n" +
		"no store. Format: docs/archive.md.",
	example: "  msjfarm archive export q-fig3 -o fig3.msjar\n  msjfarm archive verify fig3.msjar\n  msjfarm archive import fig3.msjar --storage ./other-data",
	subs: []command{
		{use: "export [flags] CAMPAIGN -o FILE.msjar", short: "write a campaign (id, name or id prefix) of --storage to one archive file",
			example: "  msjfarm archive export q-fig3 -o fig3.msjar --sweep examples/q-fig3.yaml\n  msjfarm archive export q-fig3 -o fig3.msjar --key signing.pem",
			env:     true, def: defArchiveExport},
		{use: "verify [flags] FILE.msjar", short: "check every member of an archive against its index and Merkle root (and its signature with --key)",
			example: "  msjfarm archive verify fig3.msjar\n  msjfarm archive verify fig3.msjar --key signing.pem.pub",
			def:     defArchiveVerify},
		{use: "import [flags] FILE.msjar", short: "load an archive into --storage, all or nothing, so results, report and further sweeps reuse it",
			example: "  msjfarm archive import fig3.msjar --storage ./msjfarm-data",
			env:     true, def: defArchiveImport},
		{use: "keygen [flags] -o KEY.pem", short: "write a new ed25519 signing key (PEM, PKCS #8) and its public key (KEY.pem.pub, PEM, PKIX)",
			example: "  msjfarm archive keygen -o signing.pem", def: defArchiveKeygen},
	},
}

func init() { commands = append(commands, archiveCommand) }

func defArchiveExport(fs *pflag.FlagSet) func([]string) int {
	ff := newFarmFlags(fs, false, "./msjfarm-data")
	out := ff.fs.StringP("output", "o", "", "archive file to write (required; written under a temporary name, renamed when complete)")
	comp := ff.fs.String("compression", "zstd", "zstd or gzip")
	sweepFile := ff.fs.String("sweep", "", "the sweep file as submitted, included beside the normalised spec (checked to be the campaign's)")
	key := ff.fs.String("key", "", "sign the Merkle root with this ed25519 private key (PEM, PKCS #8: msjfarm archive keygen, or openssl genpkey -algorithm ed25519)")
	noReport := ff.fs.Bool("no-report", false, "leave the stored report (plots, megabytes) out: msjfarm report FILE rebuilds it from the records")
	authors := ff.fs.StringArray("author", nil, "an author for CITATION.cff (repeatable; default \"msjfarm user\")")
	return func(args []string) (code int) {
		if err := ff.parse(); err != nil {
			return 2
		}
		if ff.fs.NArg() != 1 || *out == "" {
			return usagef("archive export: want one campaign and -o FILE (msjfarm archive export CAMPAIGN -o fig3.msjar)")
		}
		o := bundle.ExportOptions{Compression: *comp, Authors: *authors, NoReport: *noReport}
		if code := exportInputs(&o, *sweepFile, *key); code != 0 {
			return code
		}
		if err := exportTime(&o); err != nil {
			return usagef("archive export: %v", err)
		}
		if *out == "-" {
			return usagef("archive export: -o -: export writes a file (under a temporary name, renamed when complete), not standard output; give a file name")
		}
		if err := replaceable(*out); err != nil {
			return usagef("archive export: -o %v", err)
		}
		ctx, stop := signalContext()
		defer stop()
		defer func() { code = interruptedAs(ctx, "archive export", code) }()
		// Export only reads: a store that is not there is an error, not
		// an empty ./msjfarm-data made in the current directory.
		st, err := ff.existingStore(ctx)
		if err != nil {
			return fail("archive export: %v", err)
		}
		if inside(*out, st) {
			// The store's listing then held the archive's own temporary
			// file, which the archive listed as a member (and a later
			// export, the archive).
			return usagef("archive export: -o %s is inside the store %s, which the archive is made from: write it elsewhere", *out, st.URL())
		}
		id, err := archive.ResolveIn(ctx, st, ff.fs.Arg(0))
		if err != nil {
			return fail("archive export: %v", err)
		}
		start := time.Now()
		tmp, err := os.CreateTemp(filepath.Dir(*out), ".msjar-*")
		if err != nil {
			return fail("archive export: %v", err)
		}
		sum, err := exportInto(ctx, st, id, tmp, *out, o)
		if err != nil {
			return fail("archive export: %v (nothing written)", err) // Export's errors name the campaign
		}
		for _, w := range sum.Warnings {
			fmt.Fprintf(stderr, "msjfarm archive export: warning: %s\n", w)
		}
		info, _ := os.Stat(*out)
		signed := "unsigned"
		if sum.Signed {
			signed = "signed"
		}
		fmt.Fprintf(stderr, "msjfarm archive export: campaign %s: %d records, %d plugin binaries, %d traces; %d members, %d bytes (%d compressed, %s), %s, in %s\n",
			id, sum.Records, sum.Plugins, sum.Traces, sum.Members, sum.Bytes, info.Size(), *comp, signed, time.Since(start).Round(time.Millisecond))
		fmt.Printf("%s  merkle-root %s\n", *out, sum.Root)
		return 0
	}
}

// exportTime sets the archive's export time from SOURCE_DATE_EPOCH, if
// set (the reproducible-builds convention): the export time is the one
// thing that differs between two exports of a campaign by one msjfarm
// (members carry the campaign's finishing time), so with it fixed they
// are byte-identical, and a reader who exports the campaign again from
// the store gets the published Merkle root.
func exportTime(o *bundle.ExportOptions) error {
	v, ok := os.LookupEnv("SOURCE_DATE_EPOCH")
	if !ok {
		return nil
	}
	sec, err := strconv.ParseInt(v, 10, 64)
	if err != nil || sec < 0 || sec > 253402300799 {
		return fmt.Errorf("SOURCE_DATE_EPOCH=%q: want whole seconds since 1970-01-01 UTC, up to the year 9999", v)
	}
	o.Now = time.Unix(sec, 0).UTC()
	return nil
}

// replaceable refuses to let export replace an existing file that is not
// an archive (zstd or gzip, as export writes): -o summary.csv or -o
// notes.txt, a slip of the finger, would otherwise be lost. A directory,
// or anything but a regular file, is refused too.
func replaceable(path string) error {
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("%s exists and is not a regular file", path)
	}
	if fi.Size() > 0 && !bundle.IsArchive(path) {
		return fmt.Errorf("%s exists and is not a msjfarm archive: remove it, or choose another name (an archive is replaced)", path)
	}
	return nil
}

// exportInputs checks --compression and reads --sweep and --key into
// o; a non-zero code (2) names the flag that is wrong.
func exportInputs(o *bundle.ExportOptions, sweepFile, key string) int {
	if o.Compression != "zstd" && o.Compression != "gzip" {
		return usagef("archive export: --compression %q: want zstd or gzip", o.Compression)
	}
	if sweepFile != "" {
		b, err := os.ReadFile(sweepFile)
		if err != nil {
			return usagef("archive export: --sweep: %v", err)
		}
		if len(b) > sweep.MaxFileSize {
			return usagef("archive export: --sweep %s: %d bytes, more than a sweep file may have (%d)", sweepFile, len(b), sweep.MaxFileSize)
		}
		o.Submitted = b
	}
	if key != "" {
		k, err := bundle.ReadPrivateKey(key)
		if err != nil {
			return usagef("archive export: --key: %v", err)
		}
		o.Key = k
	}
	return 0
}

// exportInto exports campaign id into tmp, a temporary file in out's
// directory, synced and renamed to out only when complete: a failed or
// interrupted export leaves nothing half-written at out (tmp is removed).
func exportInto(ctx context.Context, st storage.Store, id string, tmp *os.File, out string, o bundle.ExportOptions) (*bundle.Summary, error) {
	sum, err := bundle.Export(ctx, st, id, tmp, o)
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(tmp.Name(), 0o644)
	}
	if err == nil {
		err = os.Rename(tmp.Name(), out)
	}
	if err != nil {
		os.Remove(tmp.Name())
		return nil, err
	}
	return sum, nil
}

// readPublicKey reads --key of verify, import, reproduce and report.
func readPublicKey(path string) (ed25519.PublicKey, error) {
	if path == "" {
		return nil, nil
	}
	return bundle.ReadPublicKey(path)
}

func defArchiveVerify(fs *pflag.FlagSet) func([]string) int {
	key := fs.String("key", "", "also check the signature with this ed25519 public key (PEM, PKIX: the .pub of msjfarm archive keygen, or openssl pkey -pubout)")
	asJSON := fs.Bool("json", false, "print the format, index root and signature as JSON")
	return func(args []string) int {
		if len(args) != 1 {
			return usagef("archive verify: want one archive file (msjfarm archive verify fig3.msjar [--key KEY.pub])")
		}
		pub, err := readPublicKey(*key)
		if err != nil {
			return usagef("archive verify: --key: %v", err)
		}
		start := time.Now()
		// What verify keeps as the archive streams past (the checksums
		// can be large) goes when it is interrupted: it was left behind.
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		temporary, interruptible := cleanOnInterrupt("archive verify", cancel)
		defer interruptible()
		dir, err := scratch.MkdirTemp("msjar-verify-")
		if err != nil {
			return fail("archive verify: %v", err)
		}
		temporary(dir)
		o, err := bundle.VerifyIn(ctx, dir, args[0], pub, bundle.Limits{})
		if err != nil {
			return fail("archive verify: %v", err)
		}
		if *asJSON {
			b, _ := json.MarshalIndent(map[string]any{"format": o.Format, "members": len(o.Index.Members), "bytes": o.Bytes,
				"merkle_root": o.Index.Root, "signature": o.Signature, "key_checked": o.KeyChecked, "compression": o.Compression,
				"finalised": o.Finalised, "results_checked": o.ResultsChecked}, "", "  ")
			fmt.Println(string(b))
			return 0
		}
		// An archive exported before its campaign finalised is intact
		// but partial: the first line said only "OK", and the line that
		// says its results are not checked came after.
		verdict := "OK"
		if !o.Finalised {
			verdict = "OK, PARTIAL (an unfinished campaign's; results not checked)"
		}
		fmt.Printf("%s: %s: format %s version %d, campaign %s (%s), %d members, %d bytes (%s), merkle-root %s\n",
			args[0], verdict, o.Format.Format, o.Format.Version, o.Format.Campaign, o.Format.Name, len(o.Index.Members), o.Bytes, o.Compression, o.Index.Root)
		fmt.Printf("written by msjfarm %s\n", o.Format.Msjfarm)
		if o.Finalised {
			fmt.Printf("results: %d result objects match the campaign's checksums (recorded at its finalisation)\n", o.ResultsChecked)
		} else {
			fmt.Println("results: not checked: the campaign has no checksums to check them against (exported before it finalised, or while resubmitted)")
		}
		switch {
		case o.Signature == nil:
			fmt.Println("signature: none")
		case o.KeyChecked:
			fmt.Printf("signature: ed25519, verified with the given key (fingerprint %s)\n", o.Signature.Fingerprint)
		default:
			fmt.Printf("signature: ed25519 by the key it carries (fingerprint %s), NOT checked against a key you trust: anyone can sign with a key of their own (give --key with the signer's public key)\n", o.Signature.Fingerprint)
		}
		fmt.Fprintf(stderr, "msjfarm archive verify: %s\n", time.Since(start).Round(time.Millisecond))
		return 0
	}
}

func defArchiveImport(fs *pflag.FlagSet) func([]string) int {
	ff := newFarmFlags(fs, false, "./msjfarm-data")
	key := ff.fs.String("key", "", "refuse the archive unless its signature verifies with this ed25519 public key (PEM, PKIX)")
	return func(args []string) (code int) {
		if err := ff.parse(); err != nil {
			return 2
		}
		if ff.fs.NArg() != 1 {
			return usagef("archive import: want one archive file (msjfarm archive import fig3.msjar --storage URL)")
		}
		pub, err := readPublicKey(*key)
		if err != nil {
			return usagef("archive import: --key: %v", err)
		}
		ctx, stop := signalContext()
		defer stop()
		defer func() { code = interruptedAs(ctx, "archive import", code) }()
		// The archive first: a refused one left an empty store directory
		// made for it. An interrupt while it is read and extracted (which
		// a stalled pipe or network file holds in a read) exits within
		// 10 s, its extraction removed: the command held on, deaf to
		// Ctrl-C and SIGTERM. Once it is extracted, the import stops at
		// an interrupt as at any failure.
		xctx, cancel := context.WithCancel(ctx)
		defer cancel()
		temporary, extracted := cleanOnInterrupt("archive import", cancel)
		defer extracted()
		dir, err := scratch.MkdirTemp("msjar-")
		if err != nil {
			return fail("archive import: %v (nothing imported)", err)
		}
		temporary(dir)
		x, err := bundle.ExtractInto(xctx, dir, ff.fs.Arg(0), pub, bundle.Limits{})
		if err != nil {
			return fail("archive import: %v (nothing imported)", err)
		}
		defer x.Close()
		extracted()
		st, err := ff.store(ctx)
		if err != nil {
			return fail("archive import: %v", err)
		}
		// The summary and the report are rendered from the archive's
		// records before anything is written, so that what can fail in
		// reading the campaign fails while the store is untouched: the
		// rebuild after the writes failed and left the campaign imported
		// but unreadable, against the promise of all or nothing.
		d, err := prepareDerived(ctx, x.Store, x.Format.Campaign, st.URL())
		if err != nil {
			return fail("archive import: %s: campaign %s cannot be read: %v (nothing imported)", ff.fs.Arg(0), x.Format.Campaign, err)
		}
		defer d.close()
		sum, err := bundle.Import(ctx, x, st)
		if err != nil {
			return fail("archive import: %v", err)
		}
		fmt.Printf("msjfarm archive import: campaign %s (%s) into %s: %d objects written, %d already there\n",
			sum.Campaign, x.Format.Name, st.URL(), sum.Written, sum.Present)
		warnFutureCreated(ctx, st, sum.Campaign)
		if sum.Marked > 0 {
			fmt.Printf("msjfarm archive import: its %d new results answer this campaign only: other campaigns run those tasks again, and the first run that agrees with one makes it reusable (one that disagrees fails its task, naming this campaign)\n", sum.Marked)
		}
		if sum.Derived > 0 {
			if err := d.write(ctx, st); err != nil {
				return fail("archive import: the campaign's results are imported, but its summary and report could not be rebuilt from them: %v (msjfarm report %s --store --storage %s rebuilds them)", err, sum.Campaign, st.URL())
			}
			fmt.Printf("msjfarm archive import: the summary and the report rebuilt from the records (the archive's %d files of them are not tied to the records, and were left out)\n", sum.Derived)
		}
		return 0
	}
}

func defArchiveKeygen(fs *pflag.FlagSet) func([]string) int {
	out := fs.StringP("output", "o", "", "private key file to create (mode 0600; the public key goes to FILE.pub)")
	return func(args []string) int {
		if len(args) != 0 || *out == "" {
			return usagef("archive keygen: want -o KEY.pem and no arguments")
		}
		pub, err := bundle.GenerateKey(*out)
		if err != nil {
			return fail("archive keygen: %v", err)
		}
		fmt.Printf("%s (private), %s.pub (public): ed25519, fingerprint %s\n", *out, *out, bundle.Fingerprint(pub))
		return 0
	}
}

// campaignSource opens what a report or reproduce argument names: an
// archive file (an existing regular file: verified, with keyFile's key
// if given, and extracted; the caller closes x, which removes the
// extraction directory), else a campaign (id, name or id prefix) of
// --storage.
//
// temporary, if not nil, is given the extraction directory before the
// extraction starts (for the command to remove it when interrupted).
func campaignSource(ctx context.Context, ff *farmFlags, arg, keyFile string, temporary func(string)) (st storage.Store, id string, x *bundle.Extracted, err error) {
	fi, serr := os.Stat(arg)
	switch {
	case serr == nil && fi.IsDir():
		return nil, "", nil, fmt.Errorf("%s is a directory: want an archive file or a campaign (a store is --storage)", arg)
	case serr != nil && (strings.HasSuffix(arg, ".msjar") || strings.ContainsRune(arg, os.PathSeparator)):
		// A campaign is named by id or name, never a path: this was
		// meant as a file ("no results at ./msjfarm-data" said nothing
		// of it).
		return nil, "", nil, fmt.Errorf("archive %s: %w", arg, serr)
	}
	// A regular file, or a pipe (reproduce <(curl …), /dev/stdin): the
	// archive is read in one pass.
	if serr == nil && (fi.Mode().IsRegular() || fi.Mode()&(fs.ModeNamedPipe|fs.ModeCharDevice) != 0) {
		pub, err := readPublicKey(keyFile)
		if err != nil {
			return nil, "", nil, fmt.Errorf("--key: %w", err)
		}
		dir, err := scratch.MkdirTemp("msjar-")
		if err != nil {
			return nil, "", nil, err
		}
		if temporary != nil {
			temporary(dir)
		}
		if x, err = bundle.ExtractInto(ctx, dir, arg, pub, bundle.Limits{}); err != nil {
			return nil, "", nil, err
		}
		return x.Store, x.Format.Campaign, x, nil
	}
	if keyFile != "" {
		// It was ignored: a reader who gave it believed a signature was
		// checked.
		return nil, "", nil, usageError{fmt.Errorf("--key %s: a key checks an archive file's signature, and %s is not a file but a campaign of --storage, which is not signed", keyFile, arg)}
	}
	if st, err = ff.existingStore(ctx); err != nil {
		return nil, "", nil, err
	}
	id, err = archive.ResolveIn(ctx, st, arg)
	return st, id, nil, err
}

// archiveHint says how to get a msjfarm with another engine version: the
// revision the archive's provenance recorded for it, else how to find one.
const maxHintRead = 16 << 20

func archiveHint(x *bundle.Extracted) func(string) string {
	// At most maxHintRead bytes of it: the hint is a convenience, and
	// reading a provenance member padded to 1 GiB (a 37 KB archive) took
	// that much memory before a task was reproduced.
	var prov bundle.Provenance
	if f, err := os.Open(filepath.Join(x.Dir, bundle.ProvenanceMember)); err == nil {
		_ = json.NewDecoder(io.LimitReader(f, maxHintRead)).Decode(&prov)
		f.Close()
	}
	return func(engine string) string {
		if h := prov.EngineHint(engine); h != "" {
			return h
		}
		return reproduce.DefaultHint(engine)
	}
}

// errArchiveStore is returned for --store with an archive.
var errArchiveStore = errors.New("--store with an archive file: the archive is read-only here (msjfarm archive import it into a store first)")

// derivedFiles are an imported campaign's summary table, precision table
// and report, rendered from its records as its finalisation did. An
// archive ties its records to the campaign (checksums, Merkle root,
// signature) but not these: an archive whose summary.csv said a tenth of
// what its records say was imported as it came, `results` showed the lie,
// and `reproduce` found every record bit-identical.
type derivedFiles struct {
	id          string
	table, prec []byte
	dir         string // the rendered report
}

// prepareDerived renders campaign id's derived files from src (the
// extracted archive), naming from (the store it is imported into) in the
// report's commands: the same files a rebuild from the store makes once
// the records are there.
func prepareDerived(ctx context.Context, src storage.Store, id, from string) (*derivedFiles, error) {
	cat, err := registry.ForCampaign(ctx, src, id)
	if err != nil {
		return nil, err
	}
	r, err := archive.Open(ctx, src, id, cat)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	rc, _, err := r.ReportCampaign(ctx)
	if err != nil {
		return nil, err
	}
	rc.From = from
	var prec *archive.PrecisionSummary
	if r.Manifest != nil {
		prec = r.Manifest.Precision.FromRecords(rc.Points) // as summary.csv: from the records
	}
	d := &derivedFiles{id: id}
	var table bytes.Buffer
	if err := aggregate.WriteCSV(&table, rc.Points); err != nil {
		return nil, err
	}
	d.table = table.Bytes()
	if prec != nil {
		d.prec = archive.PrecisionCSV(prec)
	}
	if d.dir, err = scratch.MkdirTemp("msjfarm-import-report-"); err != nil {
		return nil, err
	}
	if err := archive.RenderReportTo(report.DirSink(d.dir), rc, prec); err != nil {
		d.close()
		return nil, err
	}
	return d, nil
}

// write stores the derived files in st.
func (d *derivedFiles) write(ctx context.Context, st storage.Store) error {
	if err := st.Put(ctx, storage.SummaryKey(d.id), d.table); err != nil {
		return err
	}
	if d.prec != nil {
		if err := st.Put(ctx, archive.PrecisionKey(d.id), d.prec); err != nil {
			return err
		}
	}
	return publishWithRetry(ctx, st, d.id, archive.DirSource(d.dir), reportAttempts, coordinator.ReportRetryWait)
}

func (d *derivedFiles) close() { os.RemoveAll(d.dir) }

// warnFutureCreated warns when the imported campaign's manifest says it
// was created in the future. A name resolves to the campaign of that name
// created last: an archive whose manifest said 2099 took over the name
// from the store's own campaign, for every command that takes a name.
func warnFutureCreated(ctx context.Context, st storage.Store, id string) {
	data, err := st.Get(ctx, storage.ManifestKey(id))
	if err != nil {
		return
	}
	var m archive.Manifest
	if json.Unmarshal(data, &m) != nil || !m.Created.After(time.Now().Add(time.Hour)) {
		return
	}
	fmt.Fprintf(stderr, "msjfarm archive import: warning: campaign %s says it was created %s, in the future: its name %q now means it, over any campaign of that name created before (name campaigns by id: %s)\n",
		id, m.Created.Format(time.RFC3339), termtext.Printable(m.Name), id)
}

// inside reports whether file would be written inside st's directory (a
// local store; links resolved, the directories not made yet taken as
// where they would be made).
func inside(file string, st storage.Store) bool {
	root, ok := storage.LocalRoot(st)
	if !ok {
		return false
	}
	dir, err1 := resolvePath(filepath.Dir(file))
	root, err2 := resolvePath(root)
	if err1 != nil || err2 != nil {
		return false
	}
	rel, err := filepath.Rel(root, dir)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, "../")
}

// resolvePath is p absolute with the links of its longest existing
// prefix resolved: a report's --out in a directory not made yet inside
// the store was not found inside it.
func resolvePath(p string) (string, error) {
	p, err := filepath.Abs(p)
	if err != nil {
		return "", err
	}
	rest := ""
	for {
		if r, err := filepath.EvalSymlinks(p); err == nil {
			return filepath.Join(r, rest), nil
		}
		parent := filepath.Dir(p)
		if parent == p {
			return "", fmt.Errorf("%s: no existing ancestor", p)
		}
		rest = filepath.Join(filepath.Base(p), rest)
		p = parent
	}
}
