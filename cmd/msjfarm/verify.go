package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/pflag"

	"github.com/msjfarm/msjfarm/internal/protocol"
	"github.com/msjfarm/msjfarm/internal/termtext"
	"github.com/msjfarm/msjfarm/storage"
	"github.com/msjfarm/msjfarm/sweep"
)

// addVerifyFlag adds --verify to run and submit: the spot-verification
// fraction, overriding the sweep file's verify (docs/security.md).
func addVerifyFlag(fs *pflag.FlagSet) *float64 {
	return fs.Float64("verify", 0, "re-run this fraction of the tasks (chosen from the seed and task id) on another worker and compare bit for bit, e.g. 0.01; overrides the sweep file's verify")
}

// applyVerify sets f.Verify from --verify when it was given; an invalid
// fraction is a usage error naming the flag.
func applyVerify(fs *pflag.FlagSet, v float64, f *sweep.File) error {
	if !fs.Changed("verify") {
		return nil
	}
	if err := sweep.CheckVerify(v); err != nil {
		return fmt.Errorf("--%w", err)
	}
	f.Verify = v
	return nil
}

// printVerify prints a campaign's spot verification under its status.
func printVerify(w io.Writer, s *protocol.Status) {
	v := s.Verify
	if v == nil {
		return
	}
	fmt.Fprintf(w, "  verify %s: %d of %d sampled tasks verified, %d mismatched, %d unverified (no second worker), %d pending",
		s.Campaign, v.Verified, v.Sampled, v.Mismatched, v.Unverified, v.Pending)
	if v.Skipped > 0 {
		fmt.Fprintf(w, ", %d skipped (failed)", v.Skipped)
	}
	if v.Carried > 0 {
		fmt.Fprintf(w, "; %d of the sampled kept from an earlier, larger sample", v.Carried)
	}
	fmt.Fprintln(w)
	// Worker names and findings come from workers (and from storage):
	// written out, so that a name holding an escape sequence or a newline
	// neither acts on the terminal nor forges a line.
	if len(v.Disagreeing) > 0 {
		fmt.Fprintf(w, "  verify: disagreeing workers: %s\n", termtext.OneLine(strings.Join(v.Disagreeing, ", ")))
	}
	if len(v.Nondeterministic) > 0 {
		fmt.Fprintf(w, "  verify: not deterministic (three runs, three results; msjfarm plugin check tells): %s\n", termtext.OneLine(strings.Join(v.Nondeterministic, ", ")))
	}
	for _, f := range v.Findings {
		fmt.Fprintf(w, "  verify mismatch: %s\n", termtext.OneLine(f))
	}
}

// storedVerify reads a finished campaign's verification report (nil when
// it has none).
func storedVerify(ctx context.Context, st storage.Store, id string) *protocol.VerifyStatus {
	data, err := st.Get(ctx, protocol.VerifyReportKey(id))
	if err != nil {
		return nil
	}
	var r protocol.VerifyReport
	if json.Unmarshal(data, &r) != nil {
		return nil
	}
	return &r.Status
}
