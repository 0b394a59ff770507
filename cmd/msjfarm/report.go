package main

import (
	"slices"

	"github.com/spf13/pflag"

	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/msjfarm/msjfarm/coordinator"
	"github.com/msjfarm/msjfarm/internal/protocol"
	"github.com/msjfarm/msjfarm/results/archive"
	"github.com/msjfarm/msjfarm/results/report"
	"github.com/msjfarm/msjfarm/storage"
	"github.com/msjfarm/msjfarm/worker/registry"
)

// runReport (re)generates a campaign's report from storage (spec,
// manifest, result records) into a local directory and prints the path of
// its index.html. It works on unfinished campaigns too (the report then
// covers the results so far).
func defReport(fs *pflag.FlagSet) func([]string) int {
	ff := newFarmFlags(fs, false, "./msjfarm-data")
	out := ff.fs.String("out", "", "directory to write the report to (default ./msjfarm-report/<campaign>)")
	store := ff.fs.Bool("store", false, "also store the regenerated report under campaigns/<id>/report/ in --storage")
	key := ff.fs.String("key", "", "with an archive file: refuse it unless its signature verifies with this ed25519 public key (PEM, PKIX)")
	return func(args []string) int {
		if err := ff.parse(); err != nil {
			return 2
		}
		if ff.fs.NArg() < 1 {
			return usagef("report: want a campaign: id, name or id prefix (msjfarm report <campaign> [<campaign to overlay>...] [-out DIR])")
		}
		id := ff.fs.Arg(0)
		// Reading and drawing run no simulation: the collector's default
		// pace (at the simulation pace the discarded records and drawing
		// buffers pile up to five times what is live).
		paceReader()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
		defer cancel()
		temporary, interruptible := cleanOnInterrupt("report", cancel)
		defer interruptible()
		// An archive file (msjfarm archive export) is verified and
		// extracted into a temporary store: the report is rebuilt from
		// the archive alone.
		st, id, x, err := campaignSource(ctx, ff, id, *key, temporary)
		if err != nil {
			return fail("report: %v", err)
		}
		if x != nil {
			defer x.Close()
			if *store {
				return usagef("report: %v", errArchiveStore)
			}
		}
		cat, err := registry.ForCampaign(ctx, st, id)
		if err != nil {
			return fail("report: %v", err)
		}
		// A campaign of more than archive.ReportRecordsMax tasks is read
		// a point at a time (its report has no per-replication table, as
		// the coordinator's), a smaller one with every record.
		r, err := archive.Open(ctx, st, id, cat)
		if err != nil {
			return fail("report: %v", err)
		}
		defer r.Close()
		rc, nrec, err := r.ReportCampaign(ctx)
		if err != nil {
			return fail("report: %v", err)
		}
		warnReader("report", r.Warnings)
		// The page's commands name what this report was read from: the
		// archive, or this store (not the store the campaign ran on,
		// which may be another machine's).
		rc.From = st.URL()
		if x != nil {
			rc.From, rc.FromArchive = ff.fs.Arg(0), true
		}
		if r.Manifest == nil || r.Manifest.State != protocol.CampaignDone {
			fmt.Fprintf(stderr, "msjfarm report: campaign %s is not finished: report of the %d results so far\n", id, nrec)
		}
		// Further campaigns are overlaid in the figures and tables.
		overlay, err := loadOverlays(ctx, st, ff.fs.Args()[1:])
		if err != nil {
			return fail("report: %v", err)
		}
		// The precision outcome from the records, as the summary: the
		// manifest's is covered by no checksum (an archive's or a store's).
		var prec *archive.PrecisionSummary
		if r.Manifest != nil {
			prec = r.Manifest.Precision.FromRecords(rc.Points)
		}
		dir := *out
		if dir == "" {
			dir = filepath.Join("msjfarm-report", id)
		}
		if code := writeReport(ctx, st, id, dir, *store, rc, prec, overlay, temporary); code != 0 {
			return code
		}
		abs, err := filepath.Abs(filepath.Join(dir, "index.html"))
		if err != nil {
			return fail("report: %v", err)
		}
		fmt.Println(abs)
		if n := len(r.Modified); n > 0 {
			// Results the campaign finalised with are gone or altered:
			// the report was written without them, and said "(done)" with
			// every figure empty and exit 0 when all were gone (a store
			// copied without its results/ objects).
			return fail("report: %d of the campaign's results were left out (the warnings above say why): the report lacks them", n)
		}
		return 0
	}
}

// writeReport renders the report into dir, stores it with --store, and
// returns the exit code. The files are written as they are finished into
// a temporary directory beside dir (a report of 10^5 points is over 100
// MB: held whole next to the point summaries it doubled the command's
// memory) and moved into dir only once all are written, so that a failed
// rendering leaves dir as it was; existing files of the same names are
// replaced.
func writeReport(ctx context.Context, st storage.Store, id, dir string, store bool, rc report.Campaign, prec *archive.PrecisionSummary, overlay []report.Campaign, temporary func(string)) int {
	dir = filepath.Clean(dir)
	if inside(filepath.Join(dir, "index.html"), st) {
		// The report landed among the campaigns' objects (in
		// campaigns/<id>/, 145 files the next archive export carried),
		// where only msjfarm writes.
		root, _ := storage.LocalRoot(st)
		return usagef("report: --out %s is inside the store %s, where only msjfarm writes: give a directory outside it (--store publishes the report into the store)", dir, root)
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return fail("report: %v", err)
	}
	tmp, err := os.MkdirTemp(filepath.Dir(dir), "."+filepath.Base(dir)+".tmp-")
	if err != nil {
		return fail("report: %v", err)
	}
	defer os.RemoveAll(tmp)
	temporary(tmp)
	if err := archive.RenderReportTo(report.DirSink(tmp), rc, prec, overlay...); err != nil {
		return fail("report: %v", err)
	}
	if errors.Is(ctx.Err(), context.Canceled) {
		// Interrupted while rendering, which does not look at ctx: the
		// report was moved into --out all the same, then exit 130 (143 on
		// SIGTERM: cleanOnInterrupt's handler exits).
		return fail("report: interrupted: nothing was written to %s", dir)
	}
	// Stored from the temporary directory: it holds this report's files
	// and nothing else.
	code := 0
	if store {
		code = storeReport(ctx, st, id, archive.DirSource(tmp), len(overlay) > 0, dir)
	}
	names, err := archive.DirSource(tmp).Names()
	if err == nil {
		err = os.MkdirAll(dir, 0o755)
	}
	if err == nil {
		err = reportReplaceable(dir, names)
	}
	if err != nil {
		return fail("report: %v", err)
	}
	prev := readReportMarker(dir)
	for _, n := range names {
		if err := os.Rename(filepath.Join(tmp, n), filepath.Join(dir, n)); err != nil {
			return fail("report: %v", err)
		}
	}
	if removed := removeStale(dir, prev, names); removed > 0 {
		fmt.Fprintf(stderr, "msjfarm report: removed %d files of the report of campaign %s that %s held and this report does not write\n", removed, prev.Campaign, dir)
	}
	if err := writeReportMarker(dir, id, names); err != nil {
		return fail("report: %v", err)
	}
	return code
}

// reportMarker is the file a report leaves in its directory naming its
// campaign and files, so that the next report into that directory removes
// what this one wrote and it does not: reports of two campaigns into one
// --out left the first's figures (counter phases, MSFQ phases) beside the
// second's, without a word.
const reportMarker = ".msjfarm-report.json"

type reportFiles struct {
	Campaign string   `json:"campaign"`
	Files    []string `json:"files"`
}

// readReportMarker is dir's marker (empty without one or unreadable).
func readReportMarker(dir string) reportFiles {
	var m reportFiles
	if data, err := os.ReadFile(filepath.Join(dir, reportMarker)); err == nil {
		_ = json.Unmarshal(data, &m)
	}
	return m
}

func writeReportMarker(dir, id string, names []string) error {
	data, err := json.Marshal(reportFiles{Campaign: id, Files: names})
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, reportMarker), append(data, '\n'), 0o644)
}

// removeStale removes the files prev lists that names does not: only
// plain file names of dir (the marker is the directory's, and a name with
// a separator or ".." is not one a report writes), only regular files.
func removeStale(dir string, prev reportFiles, names []string) int {
	n := 0
	for _, f := range prev.Files {
		if f != filepath.Base(f) || f == "." || f == ".." || f == reportMarker || slices.Contains(names, f) {
			continue
		}
		p := filepath.Join(dir, f)
		if fi, err := os.Lstat(p); err == nil && fi.Mode().IsRegular() && os.Remove(p) == nil {
			n++
		}
	}
	return n
}

// loadOverlays loads the campaigns named by args (ids, names or id
// prefixes) to overlay on the report's.
func loadOverlays(ctx context.Context, st storage.Store, args []string) ([]report.Campaign, error) {
	var overlay []report.Campaign
	for _, arg := range args {
		oid, err := archive.ResolveIn(ctx, st, arg)
		if err != nil {
			return nil, err
		}
		ocat, err := registry.ForCampaign(ctx, st, oid)
		if err != nil {
			return nil, err
		}
		r, err := archive.Open(ctx, st, oid, ocat)
		if err != nil {
			return nil, err
		}
		o, _, err := r.ReportCampaign(ctx)
		_ = r.Close()
		if err != nil {
			return nil, err
		}
		overlay = append(overlay, o)
	}
	return overlay, nil
}

// storeReport is report --store: it publishes the regenerated report
// under campaigns/<id>/report/ (not an overlay's, which is only written
// to dir) and returns the exit code.
func storeReport(ctx context.Context, st storage.Store, id string, files archive.ReportSource, overlay bool, dir string) int {
	if overlay {
		fmt.Fprintf(stderr, "msjfarm report: an overlay is not stored (--store applies to a single campaign's report)\n")
		return 0
	}
	if err := publishWithRetry(ctx, st, id, files, reportAttempts, coordinator.ReportRetryWait); err != nil {
		return fail("report: --store: %v (the local copy is in %s)", err, dir)
	}
	fmt.Fprintf(stderr, "msjfarm report: stored under %s\n", reportLocation(st, id))
	return 0
}

// reportAttempts bounds report --store's publication attempts.
const reportAttempts = 5

// publishWithRetry publishes a report (coordinator.PublishReport, which
// leaves no staging behind) up to attempts times, waiting wait, then twice
// as long, between them, and says why each attempt failed.
func publishWithRetry(ctx context.Context, st storage.Store, id string, files archive.ReportSource, attempts int, wait time.Duration) error {
	for a := 1; ; a++ {
		err := coordinator.PublishReport(ctx, st, id, files)
		if err == nil || a == attempts {
			return err
		}
		fmt.Fprintf(stderr, "msjfarm report: storing the report failed (attempt %d of %d): %v; trying again in %s\n", a, attempts, err, wait)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(wait):
		}
		wait *= 2
	}
}

// reportLocation is where the stored report's index.html is: a file path
// for a local store, the store URL and key otherwise.
func reportLocation(st storage.Store, id string) string {
	return storedLocation(st, storage.ReportPrefix(id)+"index.html")
}

// precisionLine counts the points of a precision.csv by status:
// "2 points met the target, 1 hit max_replications".
func precisionLine(data []byte) string {
	rows, err := csv.NewReader(bytes.NewReader(data)).ReadAll()
	if err != nil || len(rows) == 0 {
		return "unreadable precision.csv"
	}
	col := -1
	for i, h := range rows[0] {
		if h == "status" {
			col = i
		}
	}
	count := map[string]int{}
	for _, r := range rows[1:] {
		if col >= 0 && col < len(r) {
			count[r[col]]++
		}
	}
	var parts []string
	for _, st := range []struct{ status, text string }{
		{coordinator.PrecisionMet, "met the target"},
		{coordinator.PrecisionCapped, "hit max_replications"},
		{coordinator.PrecisionUnstable, "unstable (stopped)"},
		{coordinator.PrecisionUndefined, "metric undefined (stopped)"},
		{coordinator.PrecisionPending, "pending"},
	} {
		if n := count[st.status]; n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, st.text))
		}
	}
	return fmt.Sprintf("%d points: %s", len(rows)-1, strings.Join(parts, ", "))
}

// reportReplaceable checks, before any file of the report is moved into dir,
// that each of names may be: a directory in the way failed the move at
// its name, with the files before it already moved, and --out was left
// half this report's and half the last.
func reportReplaceable(dir string, names []string) error {
	for _, n := range names {
		if fi, err := os.Lstat(filepath.Join(dir, n)); err == nil && fi.IsDir() {
			return fmt.Errorf("%s is a directory, where the report writes a file: nothing was written to %s", filepath.Join(dir, n), dir)
		}
	}
	return nil
}
