package main

import (
	"github.com/spf13/pflag"

	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/msjfarm/msjfarm/results/record"
	"github.com/msjfarm/msjfarm/storage"
)

// runGC lists the stored results no campaign refers to and, with --delete,
// removes them (record.Unreferenced says which are safe to consider).
func defGC(fs *pflag.FlagSet) func([]string) int {
	ff := newFarmFlags(fs, false, "./msjfarm-data")
	del := ff.fs.Bool("delete", false, "remove the unreferenced results (without it, only list them)")
	minAge := ff.fs.Duration("min-age", time.Hour, "consider only results older than this (a younger one may be about to be referenced by a running campaign)")
	quiet := ff.fs.BoolP("q", "q", false, "print only the totals")
	return func(args []string) int {
		if err := ff.parse(); err != nil {
			return 2
		}
		if ff.fs.NArg() != 0 {
			return usagef("gc: takes no arguments (flags: --storage, --delete, --min-age)")
		}
		if *minAge < 0 {
			// It acted as 0, the setting that may remove a result a
			// running campaign is about to refer to.
			return usagef("gc: --min-age must be >= 0, got %s", *minAge)
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
		defer cancel()
		st, err := ff.existingStore(ctx)
		if err != nil {
			return fail("gc: %v", err)
		}
		// Only a store msjfarm made: every process that uses one writes
		// its identity first (an import since this check; one before it
		// wrote campaigns only). In any other directory gc listed files of
		// the user's that happened to match a result's path, and --delete
		// removed them.
		if ok, err := isStore(ctx, st); err != nil {
			return fail("gc: %v", err)
		} else if !ok {
			return fail("gc: %s is not a msjfarm result store (it has no %s, which every run, coordinator and worker writes first, and no campaign); nothing was listed or deleted", st.URL(), storage.IDKey)
		}
		if links, err := storage.Links(ctx, st, 5); err != nil {
			return fail("gc: %v", err)
		} else if len(links) > 0 {
			return fail("gc: %s holds symbolic links (%s): a campaign reached through one is read by results and report but not listed, so gc would take its results for unreferenced; replace the links with what they point to, then run gc again (nothing was listed or deleted)",
				st.URL(), strings.Join(links, ", "))
		}
		infos, err := record.Unreferenced(ctx, st, *minAge)
		if err != nil {
			return fail("gc: %v", err)
		}
		var bytes int64
		for _, in := range infos {
			bytes += in.Size
			if !*quiet {
				fmt.Printf("%s\t%d\t%s\n", in.Key, in.Size, in.ModTime.Local().Format(shownTime))
			}
		}
		if !*del {
			fmt.Fprintf(stderr, "msjfarm gc: %d results (%d bytes) in %s are referenced by no campaign and older than %s; --delete removes them\n",
				len(infos), bytes, st.URL(), *minAge)
			return 0
		}
		for _, in := range infos {
			if err := st.Delete(ctx, in.Key); err != nil {
				return fail("gc: %v", err)
			}
			// Its imported mark too (after the result: a mark left by a
			// crash between the two only costs a run that agrees).
			if key, ok := storage.StoredResultContentKey(in.Key); ok {
				if err := st.Delete(ctx, storage.ImportedKey(key)); err != nil {
					return fail("gc: %v", err)
				}
			}
		}
		fmt.Fprintf(stderr, "msjfarm gc: removed %d unreferenced results (%d bytes) from %s\n", len(infos), bytes, st.URL())
		return 0
	}
}

// isStore reports whether st is a result store msjfarm made: it has an
// identity, or a campaign.
func isStore(ctx context.Context, st storage.Store) (bool, error) {
	_, err := storage.ReadID(ctx, st)
	if !errors.Is(err, storage.ErrNotFound) {
		return err == nil, err
	}
	camps, err := st.List(ctx, "campaigns/")
	return len(camps) > 0, err
}
